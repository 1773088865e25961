package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseIndex: whatever the bytes of an index, parsing returns (never
// panics), and an index without problems holds only what a call needs.
func FuzzParseIndex(f *testing.F) {
	for _, p := range []string{"../../wasm-examples/echo/index.json", "../../wasm-examples/conformance/index.json",
		"../../testdata/hostile/index.json", "../../testdata/kindgi/index.json"} {
		if b, err := os.ReadFile(filepath.FromSlash(p)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":1,"packId":"p","packVersion":"1","artifactVersion":"a","publishedAt":"t","tools":[{"id":"x","input":true,"output":{},"modulePath":"m.wasm","limits":{"fuel":1e300}}],"guardrails":[{"id":"g","kind":"k","action":{},"checkModulePath":"m"}],"agents":[{}],"flows":[{"kernelPayloadVersion":"1"}],"env":{"required":["A"],"optional":["KINDGI_X"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, problems := parseIndex(data)
		if idx == nil || !strings.HasPrefix(idx.Hash, "sha256:") {
			t.Fatalf("no index or hash: %v", idx)
		}
		if len(problems) > 0 {
			return
		}
		for _, tool := range idx.Tools {
			if tool.ID == "" || tool.ModulePath == "" || tool.Limits.Fuel < 0 {
				t.Fatalf("a tool without what a call needs: %+v", tool)
			}
		}
		for _, g := range idx.Guardrails {
			if g.InvokeID() == "" || g.ModulePath == "" || g.Action == nil {
				t.Fatalf("a guardrail without what a call needs: %+v", g)
			}
		}
	})
}

// FuzzParsePolicy: whatever the bytes of a policy, parsing returns an
// error or a policy whose every pattern is valid, and checking calls
// against it never panics.
func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(`{"default":"deny","tenants":{"t-1":{"allow":["pack.read-*"],"deny":["pack.read-secrets"]}}}`))
	f.Add([]byte(`{"tenants":{"t":{"allow":[]}}}`))
	f.Add([]byte(`{"default":"maybe"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parsePolicy(data, "fuzz")
		if err != nil {
			return
		}
		if p.Default != "allow" && p.Default != "deny" {
			t.Fatalf("default %q", p.Default)
		}
		for tenant, tp := range p.Tenants {
			for _, pat := range append(append([]string(nil), tp.Allow...), tp.Deny...) {
				if pat == "" || strings.Contains(strings.TrimSuffix(pat, "*"), "*") {
					t.Fatalf("bad pattern %q kept", pat)
				}
			}
			_ = p.Check(context.Background(), Call{Target: TargetTool, ID: "pack.read-x", Correlation: Correlation{TenantID: tenant}})
		}
		_ = p.Check(context.Background(), Call{Target: TargetTool, ID: "x", Correlation: Correlation{TenantID: "unlisted"}})
	})
}
