package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// surfaceBudget is how many exported identifiers each layer's package may
// have (top-level functions, types, variables and constants, and methods
// of exported types). packd's packages are the application's internals
// (RATIONALE.md, "Why sandbox, host and server are not a library"): under
// internal/, no one outside packd can import them, and what one layer
// offers the next only shrinks. A change that must add to it raises the
// budget here, in the same commit, saying why.
var surfaceBudget = map[string]int{
	"abi": 0, // the protocol's vocabulary: not budgeted
	// +1 (issue 43): InvokeRequest, a tool call's request with where its
	// fields lie as the host wrote them (request_fields then reads none).
	"internal/sandbox": 96,
	// replay took the record file from host (issue 40): host 107 → 85.
	// +10 (issue 43): segments, the service's record store (Segment and
	// its Append, Flush, Size, Buffered, Close; CreateSegment,
	// ReadSegment, SegmentRecord, SegmentExt, ErrNoRoom); WriteEncoded
	// went back inside.
	"internal/replay": 46,
	// +1 (issue 41): ToolSpec.ReachesNetwork, what MCP's openWorldHint says.
	// +6 (issue 45): the policy's Budget and Policy.BudgetFor, which the
	// service keeps; RefusalTenantBudget, the admission's refusal;
	// Obligation, what a grant holds a call to; Usage.CPUMicros and
	// MemoryKiBMs, usage in the units it is summed in, one home for both
	// the audit and the usage log. +1 (issue 46): Location, where a
	// Config.Source (a registry's pull) put the pack.
	"internal/host": 93,
	// service took server's call logic (issue 40): 38 of server's 59
	// identifiers moved, and the call API every face uses (Request,
	// Answer, Face, Refusal and its codes) is new. +2 (issue 45):
	// CodeTenantBudget, and Refusal.RetryAfterSeconds, the wait every face
	// says alike; +1, DefaultUsageInterval, --usage-interval's default.
	"internal/service": 76,
	// +1 (issue 41): Route, another face on the listener (/mcp).
	"internal/server": 22,
	// The MCP face (issue 41): New, Config, ErrConfig, Face and its
	// Handler, ServeStdio and Close, IndexProblems, and the six defaults
	// it documents.
	"internal/mcp": 14,
	// Signing (issue 46): the envelope and its body, the two algorithms,
	// keys made, signed, read and checked; KindPack, BodyVersion and
	// MaxEnvelope, what a pack's signature is.
	"internal/signing": 13,
	// A pack in a registry (issue 46): Push and its Pack; Puller (New,
	// Ref, Last, Moves, Resolve, Pull) and Pulled; Options; the oci://
	// Scheme, IsRef, ParseRef and DigestRef; the four media types a
	// registry's other tools see; DefaultMaxBytes and DefaultTimeout,
	// the defaults --oci-max-mib and --oci-timeout document.
	"internal/oci": 21,
}

// TestSurfaceStaysWithinItsBudget counts each package's exported
// identifiers (tests excluded) against surfaceBudget.
func TestSurfaceStaysWithinItsBudget(t *testing.T) {
	root := filepath.Join("..", "..")
	for pkg, budget := range surfaceBudget {
		if budget == 0 {
			continue
		}
		names := exported(t, filepath.Join(root, pkg))
		if len(names) > budget {
			t.Errorf("%s exports %d identifiers, over its budget of %d: trim it, or raise the budget saying why\n%s",
				pkg, len(names), budget, strings.Join(names, " "))
		}
		if len(names) < budget {
			t.Logf("%s exports %d identifiers: lower its budget of %d", pkg, len(names), budget)
		}
	}
}

// exported lists the exported identifiers of the package in dir.
func exported(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					recv := d.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if id, ok := recv.(*ast.Ident); !ok || !id.IsExported() {
						continue
					}
					names = append(names, recv.(*ast.Ident).Name+"."+d.Name.Name)
					continue
				}
				names = append(names, d.Name.Name)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	return names
}
