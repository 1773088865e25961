package host

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host/internal/egress"
	"github.com/kindgi/packd/internal/host/internal/schema"
	"github.com/kindgi/packd/internal/replay"
	"github.com/kindgi/packd/internal/sandbox"
)

// Config says what to load. IndexPath is required; the rest has working
// zero values.
type Config struct {
	IndexPath string
	// ModuleRoot is where modulePath and checkModulePath resolve; default:
	// the index's directory. No module path may leave it.
	ModuleRoot string
	// Sandbox configures the wazero runtime the pack's modules run in.
	Sandbox sandbox.Config
	// LookupEnv reads the process environment (default os.LookupEnv). Guests
	// see only the names the index declares.
	LookupEnv func(string) (string, bool)
	// PassEnv, when set, is the whole environment guests see instead
	// (KEY=VALUE; KINDGI_PACK_ENV_FILTER=off): the caller leaves out what
	// pack code must never see.
	PassEnv []string
	// Gate is consulted before every dispatch; nil allows every call.
	Gate Gate
	// Network is what the operator allows pack code's outbound HTTP
	// requests beyond each tool's network policy, and their per-call caps.
	Network NetworkConfig
	// Observe is told what happens beside the calls' answers (Observer).
	Observe Observer
	// Replaces, when set, is a serving pack this one is loaded to replace
	// (a reload): the new pack's instances count in the old one's memory
	// budget, so that the two together never hold more than it while the
	// old one finishes its calls.
	Replaces *Pack
	// Record, when set, makes a record of the calls it names
	// (Outcome.Record, record.go).
	Record *RecordConfig
	// IndexRules, when set, are a face's own rules for the index (the MCP
	// face's tool names and input schemas): what they find are load
	// problems, so a pack one of its faces cannot serve does not load.
	IndexRules func(Index) []string
	// Trust, when set, are the public keys the index must be signed by
	// (package signing): its signature at SignaturePath (default the
	// index's path and ".sig") must be one of theirs over the very bytes
	// of the index read, which must name its modules' digests. A pack
	// whose signature is missing, made by another key, over other bytes
	// or of an unknown algorithm does not load, and says which.
	Trust         []crypto.PublicKey
	SignaturePath string
	// Source, when set, fetches the pack before each load (a pull from a
	// registry: package oci) and says where it put it, which stands for
	// IndexPath, ModuleRoot and, unless set, SignaturePath; IndexPath then
	// only names the source in what is said. A fetch that fails is the
	// load's one problem.
	Source func(context.Context) (Location, error)
}

// Location is where a Config.Source put a pack: its index, the root its
// module paths resolve in, its signature ("": none came with it).
type Location struct {
	IndexPath, ModuleRoot, SignaturePath string
}

// NetworkConfig is the operator's side of outbound HTTP (package egress):
// unrestricted network, special address ranges, per-call caps. Who is
// told of each request is Config.Observe's.
type NetworkConfig = egress.Config

// Default per-call caps of outbound HTTP (NetworkConfig).
const (
	DefaultMaxRequests      = egress.DefaultMaxRequests
	DefaultMaxResponseBytes = egress.DefaultMaxResponseBytes
)

// EgressEvent is one outbound request of a call: where it went and how it
// ended, never a body or a header.
type EgressEvent = egress.Event

// EgressTracer opens a span for each outbound request of a call
// (Observer.Tracer).
type EgressTracer = egress.Tracer

// EgressSummary is what one call did on the network.
type EgressSummary = egress.Summary

// GuestLine is one whole line of a call's pack code output.
type GuestLine struct {
	Call           // who wrote it
	TraceID string // the call's trace (Request.TraceID; "": none)
	Stream  string // "stdout" or "stderr"
	Line    []byte // without its newline
}

// LoadError lists every problem found while loading a pack. ModuleRoot is
// the absolute directory module paths resolve in, when a module is
// missing from it (the problem itself reads exactly "Missing module:
// <path>", as the other pack services write it).
type LoadError struct {
	Problems   []string
	ModuleRoot string
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("loading pack: %d problem(s): %s", len(e.Problems), strings.Join(e.Problems, "; "))
}

// Pack is a loaded pack: its index, compiled modules and registry. It is
// immutable after Load and safe for concurrent dispatch.
type Pack struct {
	index *Index

	sb     *sandbox.Sandbox
	gate   Gate
	output func(GuestLine)
	egress *egress.Client
	env    []string
	lookup func(string) (string, bool) // the process environment, for credentials bound to a variable
	// boundSecrets are the ctx.secrets the index binds as credentials:
	// no call's pack code gets them.
	boundSecrets []string
	// credentialVars are the process variables the index binds as
	// credentials (a call's record redacts their values).
	credentialVars []string
	record         *RecordConfig      // nil: no call is recorded
	tools          map[string][]*tool // by id, in index order
	checks         map[string]*check
	stats          []ModuleStat
	modules        map[string]*module // by path
	closeOne       sync.Once
}

type module struct {
	path string
	sum  string          // the SHA-256 of its bytes, "sha256:…"
	mod  *sandbox.Module // nil when loading failed
	err  error           // why it cannot be called: load failure or shape
	desc sandbox.Description
	// lines maps its code's lines to its sources' in errors (nil: as is).
	lines *abi.LineTable
	// snapTape is the encoding of its snapshot's tape, for records.
	snapTape atomic.Pointer[replay.SnapshotTape]
}

type tool struct {
	spec    *ToolSpec
	in, out *schema.Schema
	mod     *module
}

type check struct {
	spec   *GuardrailSpec
	config *schema.Schema // nil: no configSchema
	mod    *module
}

// Index is the pack's index. The specs it lists are the pack's own: read
// them, never change them.
func (p *Pack) Index() Index { return *p.index }

// Load reads the index, compiles every module and schema and builds the
// registry. When anything is wrong it returns a *LoadError listing every
// problem, together with a Pack that still serves what did load (a call to a
// tool whose module failed answers handler-import-failed or
// handler-shape-invalid), unless the index itself is unusable (then the Pack
// is nil). A service refuses to start on any error; `packd invoke` goes on.
func Load(ctx context.Context, cfg Config) (*Pack, error) {
	if cfg.Source != nil {
		at, err := cfg.Source(ctx)
		if err != nil {
			return nil, &LoadError{Problems: []string{err.Error()}}
		}
		cfg.IndexPath, cfg.ModuleRoot = at.IndexPath, at.ModuleRoot
		if cfg.SignaturePath == "" {
			cfg.SignaturePath = at.SignaturePath
		}
	}
	data, err := os.ReadFile(cfg.IndexPath)
	if err != nil {
		return nil, &LoadError{Problems: []string{"Cannot read the pack index: " + err.Error()}}
	}
	idx, problems := parseIndex(data)
	if len(problems) > 0 && idx.PackID == "" && len(idx.Tools) == 0 && len(idx.Guardrails) == 0 {
		return nil, &LoadError{Problems: problems}
	}
	if len(cfg.Trust) > 0 {
		if p := checkSignature(cfg, idx); p != "" {
			// Nothing of an index not signed by a trusted key is loaded.
			return nil, &LoadError{Problems: []string{p}}
		}
	}
	if cfg.IndexRules != nil {
		problems = append(problems, cfg.IndexRules(*idx)...)
	}
	envLookup := cfg.LookupEnv
	if envLookup == nil {
		envLookup = os.LookupEnv
	}
	problems = append(problems, resolveEnvHosts(idx, envLookup)...)
	root := cfg.ModuleRoot
	if root == "" {
		root = filepath.Dir(cfg.IndexPath)
	}
	sbc := cfg.Sandbox
	obs := cfg.Observe
	sbc.PoolEvents, sbc.DroppedLines, sbc.CacheRepaired = obs.PoolEvent, obs.DroppedLine, obs.CacheRepaired
	if cfg.Record != nil {
		// A record carries its snapshot's tape, within the same bound.
		sbc.SnapshotTapeBytes = recordLimit(cfg.Record)
	}
	if cfg.Replaces != nil {
		sbc.ShareBudgetOf = cfg.Replaces.sb
	}
	sb, err := sandbox.New(ctx, sbc)
	if err != nil {
		return nil, err
	}
	p := &Pack{index: idx, sb: sb, gate: cfg.Gate, output: obs.GuestOutput, egress: egress.New(cfg.Network, egress.Observer{Request: obs.EgressRequest, Tracer: obs.Tracer}),
		record: cfg.Record, tools: map[string][]*tool{}, checks: map[string]*check{}}
	lookup := cfg.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	p.env = declaredEnv(idx, lookup)
	if cfg.PassEnv != nil {
		p.env = slices.Sorted(slices.Values(cfg.PassEnv))
	}
	// A process variable the index binds as a credential is packd's to
	// send: pack code never sees it.
	p.lookup, p.env = lookup, withoutNames(p.env, idx.credentialEnv())
	p.boundSecrets, p.credentialVars = idx.boundSecrets(), idx.credentialEnv()

	modules, stats, modProblems := loadModules(ctx, sb, root, idx, p.env)
	p.stats, p.modules = stats, modules
	problems = append(problems, modProblems...)
	problems = append(problems, p.register(modules)...)
	if len(problems) > 0 {
		le := &LoadError{Problems: problems}
		for _, m := range modules {
			if errors.Is(m.err, errMissingModule) {
				le.ModuleRoot, _ = filepath.Abs(root)
			}
		}
		return p, le
	}
	return p, nil
}

func loadModules(ctx context.Context, sb *sandbox.Sandbox, root string, idx *Index, env []string) (map[string]*module, []ModuleStat, []string) {
	paths := idx.ModulePaths()
	var problems []string
	modules := map[string]*module{}
	r, err := os.OpenRoot(root)
	if err != nil {
		problems = append(problems, fmt.Sprintf("Cannot open the module root: %v", err))
	}
	// Modules load concurrently, up to one per CPU; their problems and
	// stats are reported in index order.
	type loaded struct {
		problem string
		stat    *ModuleStat
	}
	results := make([]loaded, len(paths))
	for _, p := range paths {
		modules[p] = &module{path: p}
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, p := range paths {
		m := modules[p]
		if r == nil {
			m.err = errors.New("the module root cannot be opened")
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i].problem, results[i].stat = loadModule(ctx, sb, r, m, env, idx.ModuleDigests[p])
		}()
	}
	wg.Wait()
	var stats []ModuleStat
	for _, res := range results {
		if res.stat != nil {
			stats = append(stats, *res.stat)
		}
		if res.problem != "" {
			problems = append(problems, res.problem)
		}
	}
	if r != nil {
		_ = r.Close()
	}
	return modules, stats, problems
}

// loadModule reads one module, checks its bytes against want (its digest
// in the index's moduleDigests; "": none), compiles and describes it, warms its pool for
// calls that see env, and says what went wrong, if anything. A pool the
// memory budget cannot warm now is warmed by its first call.
func loadModule(ctx context.Context, sb *sandbox.Sandbox, r *os.Root, m *module, env []string, want string) (string, *ModuleStat) {
	wasm, err := readModule(r, m.path, sb.MaxModuleBytes())
	if err != nil {
		m.err = err
		return err.Error(), nil
	}
	m.sum = replay.ContentHash(wasm)
	if want != "" && m.sum != want {
		// The bytes hashed are the bytes compiled: a file swapped after
		// this read is never run.
		m.err = fmt.Errorf("%s is not the module the index names: its SHA-256 is %s, the index's moduleDigests says %s", m.path, m.sum, want)
		return m.err.Error(), nil
	}
	m.lines = readLines(wasm)
	start := time.Now()
	m.mod, err = sb.Compile(ctx, wasm)
	stat := &ModuleStat{Path: m.path, CompileSeconds: time.Since(start).Seconds()}
	if err != nil {
		m.err = err
		return fmt.Sprintf("%s: %v", m.path, err), stat
	}
	if m.desc, err = m.mod.Describe(ctx); err != nil {
		m.err = err
		return m.lines.Rewrite(fmt.Sprintf("%s: describing module: %v", m.path, err)), stat
	}
	if err = m.mod.Warm(ctx, env); err != nil && !errors.Is(err, sandbox.ErrMemoryBudget) {
		m.err = err
		return m.lines.Rewrite(fmt.Sprintf("%s: taking its snapshot: %v", m.path, err)), stat
	}
	return "", stat
}

func (p *Pack) register(modules map[string]*module) []string {
	var problems []string
	for _, spec := range p.index.Tools {
		if slices.ContainsFunc(p.tools[spec.ID], func(t *tool) bool { return t.spec.Version == spec.Version }) {
			continue // a duplicate, already a problem of the index
		}
		t := &tool{spec: spec, mod: modules[spec.ModulePath]}
		var err error
		if t.in, err = schema.Compile(spec.Input); err != nil {
			problems = append(problems, fmt.Sprintf("%s: input schema does not compile: %v", spec.ID, err))
		}
		if t.out, err = schema.Compile(spec.Output); err != nil {
			problems = append(problems, fmt.Sprintf("%s: output schema does not compile: %v", spec.ID, err))
		}
		if t.mod.err == nil && !serves(t.mod.desc.Tools, spec.ID) {
			problems = append(problems, fmt.Sprintf("%s: module %s does not serve tool %q (it serves %s)", spec.ID, spec.ModulePath, spec.ID, idList(t.mod.desc.Tools)))
		}
		if t.in == nil || t.out == nil {
			continue // a tool without its schemas cannot be called safely
		}
		p.tools[spec.ID] = append(p.tools[spec.ID], t)
	}
	for _, spec := range p.index.Guardrails {
		if p.checks[spec.InvokeID()] != nil {
			continue // a duplicate, already a problem of the index
		}
		c := &check{spec: spec, mod: modules[spec.ModulePath]}
		if spec.ConfigSchema != nil {
			var err error
			if c.config, err = schema.Compile(spec.ConfigSchema); err != nil {
				problems = append(problems, fmt.Sprintf("%s: configSchema does not compile: %v", spec.InvokeID(), err))
				continue
			}
		}
		if c.mod.err == nil && !slices.Contains(c.mod.desc.Checks, spec.InvokeID()) {
			problems = append(problems, fmt.Sprintf("%s: module %s does not serve check %q (it serves %s)", spec.InvokeID(), spec.ModulePath, spec.InvokeID(), idList(c.mod.desc.Checks)))
		}
		p.checks[spec.InvokeID()] = c
	}
	return append(problems, p.limitProblems(modules)...)
}

// idList names the ids a module serves, for a message.
func idList(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = strconv.Quote(id)
	}
	return strings.Join(q, ", ")
}

func serves(ids []string, id string) bool {
	return slices.Contains(ids, id) || slices.Contains(ids, abi.Wildcard)
}

// Close releases every compiled module and the runtime. Safe twice.
func (p *Pack) Close(ctx context.Context) error {
	var err error
	p.closeOne.Do(func() {
		_ = p.egress.Close(ctx)
		err = p.sb.Close(ctx)
	})
	return err
}

// ModuleStat is what loading one module cost.
type ModuleStat struct {
	Path           string
	CompileSeconds float64
}

// ModuleStats lists every module the index names, with its compile time.
func (p *Pack) ModuleStats() []ModuleStat { return p.stats }

// MemoryBudget is the bytes of linear memory all of the pack's instances
// may hold together (SandboxConfig.MemoryBudget; 0: no bound).
func (p *Pack) MemoryBudget() int64 { return p.sb.MemoryBudget() }

// PoolInstances is how many instances of each module with pooled
// instances live now (idle or serving a call), by module path.
func (p *Pack) PoolInstances() map[string]int {
	n := map[string]int{}
	for path, m := range p.modules {
		if m.mod != nil && m.mod.Pooled() {
			n[path] = m.mod.PoolInstances()
		}
	}
	return n
}

// HasTool and HasCheck say whether an id is in the index (for bounded
// metric labels).
func (p *Pack) HasTool(id string) bool  { return len(p.tools[id]) > 0 }
func (p *Pack) HasCheck(id string) bool { return p.checks[id] != nil }

// Describe returns the indexed spec of a tool: the one named version, the
// only one, or the last indexed when several exist and none is named.
func (p *Pack) Describe(id, version string) (*ToolSpec, bool) {
	entries := p.tools[id]
	if len(entries) == 0 {
		return nil, false
	}
	if version == "" {
		return entries[len(entries)-1].spec, true
	}
	for _, e := range entries {
		if e.spec.Version == version {
			return e.spec, true
		}
	}
	return nil, false
}
