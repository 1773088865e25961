package sandbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
)

// PoolInstances is how many instances of the module live now, idle or
// serving a call (0 when calls get a fresh instance).
func (m *Module) PoolInstances() int {
	if m.pool == nil {
		return 0
	}
	return int(m.pool.live.Load())
}

// Module is a compiled pack module. Calls on it may run concurrently.
type Module struct {
	sb       *Sandbox
	compiled wazero.CompiledModule
	minBytes int64 // its memory's initial size
	info     instrument.Info
	pool     *instancePool // nil: a fresh instance per call
	hasInit  bool
	http     bool  // it imports http_request: its calls may send requests
	bundle   bool  // an interpreter carrying a bundle (it exports abi.ExportJSBundle or ExportPyBundle)
	shape    error // why the module does not implement the guest ABI, or nil
	// passName is its entry in the pass's cache, beside which its code
	// (sharedcode_linux.go) and description (describecache.go) are kept;
	// "" without a cache.
	passName   string
	codeShared sync.Once
	// data is the module's active data segments once taken out of what
	// wazero instantiates (takeData, when the pool's snapshot maps an
	// image: an instance made from it needs none written); instantiating
	// holds instMu for reading, taking them for writing.
	instMu    sync.RWMutex
	dataTaken bool
	data      []dataRun
	// abiVersion is the guest ABI version the module answered when it was
	// described (0 before); packd serves only the versions abi.Serves.
	abiVersion atomic.Int32
}

// ABIVersion is the guest ABI version the module declared when Describe
// ran (0 before then).
func (m *Module) ABIVersion() int32 { return m.abiVersion.Load() }

// MinMemoryBytes is the module's initial linear memory, in bytes.
func (m *Module) MinMemoryBytes() int64 { return m.minBytes }

// ImportsHTTP reports whether the module imports http_request: only then
// can its calls send requests (Request.Egress).
func (m *Module) ImportsHTTP() bool { return m.http }

// CarriesBundle reports whether the module is an interpreter carrying a
// pack's bundle (it exports a bundle, as packd's JavaScript and Python
// runtimes do, sdk/js and sdk/py): it imports everything its interpreter
// offers (http_request for fetch), whether or not the bundle uses it.
func (m *Module) CarriesBundle() bool { return m.bundle }

// Compile validates, instruments (fuel) and compiles a module once. A module
// that imports anything packd does not provide fails here; a module that
// lacks the guest ABI exports compiles, and Shape, Describe and Call report
// ErrMissingExport. A module over Config.MaxModuleBytes, or whose
// compilation takes longer than Config.CompileTimeout, is refused.
func (s *Sandbox) Compile(ctx context.Context, wasm []byte) (*Module, error) {
	if len(wasm) > s.cfg.MaxModuleBytes {
		return nil, fmt.Errorf("compiling module: %w: %d bytes is over the limit of %d", ErrInvalidModule, len(wasm), s.cfg.MaxModuleBytes)
	}
	// The pass checks every index and section end of the module as written
	// (nothing invalid may resolve to what it adds); wazero then validates
	// the result. Its error says what is wrong with the module itself. An
	// unchanged module's pass comes from the cache (passcache.go).
	metered, info, passName, err := s.instrumented(wasm, instrument.Options{MaxTableElements: s.cfg.MaxTableElements, FunctionImportsOnly: true, MaxStackBytes: s.cfg.MaxStackBytes})
	if err != nil {
		return nil, fmt.Errorf("compiling module: %w: %w", ErrInvalidModule, err)
	}
	if s.seals != nil {
		if removed := s.seals.begin(); removed > 0 && s.cfg.CacheRepaired != nil {
			s.cfg.CacheRepaired(fmt.Sprintf("%d entries did not match their seal", removed), removed)
		}
		defer s.seals.end()
	}
	compiled, err := s.compileBounded(ctx, metered, passName)
	if err != nil && s.seals != nil && s.seals.readOnly && s.cache != nil && ctx.Err() == nil {
		// A module a read-only cache lacks is compiled, then wazero fails
		// to write it there; it keeps what it compiled in memory, so the
		// same compilation again finds it.
		compiled, err = s.compileBounded(ctx, metered, passName)
	}
	if err != nil && s.cfg.CacheDir != "" && !s.cfg.CacheReadOnly && corruptCache(err) {
		// A corrupt entry (truncated, overwritten) fails every compilation
		// of its module, on every restart: remove the entries and compile
		// once more.
		removed := clearCache(s.cfg.CacheDir)
		if s.cfg.CacheRepaired != nil {
			s.cfg.CacheRepaired(err.Error(), removed)
		}
		compiled, err = s.compileBounded(ctx, metered, passName)
	}
	if errors.Is(err, ErrCompileTimeout) || errors.Is(err, ErrDeadline) || errors.Is(err, ErrCancelled) {
		return nil, fmt.Errorf("compiling module: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("compiling module: %w: %w", ErrInvalidModule, err)
	}
	if err := s.validateImports(compiled); err != nil {
		_ = compiled.Close(ctx)
		return nil, err
	}
	_ = dropBodies(compiled) // where it cannot, they stay
	m := &Module{sb: s, compiled: compiled, info: info, passName: passName}
	for _, def := range compiled.ImportedFunctions() {
		if mod, name, _ := def.Import(); mod == abi.ImportModule && name == abi.ImportHTTPRequest {
			m.http = true
		}
	}
	for _, def := range compiled.ExportedMemories() {
		m.minBytes = int64(def.Min()) * 65536
	}
	exports := compiled.ExportedFunctions()
	_, js := exports[abi.ExportJSBundle]
	_, py := exports[abi.ExportPyBundle]
	m.bundle = js || py
	if def, ok := exports[abi.ExportInitialize]; ok && len(def.ParamTypes()) == 0 && len(def.ResultTypes()) == 0 {
		m.hasInit = true
	}
	m.shape = validateExports(compiled)
	if s.cfg.PoolSize > 0 && m.shape == nil && poolable(info) {
		m.pool = newInstancePool(m, s.cfg.PoolSize)
		s.poolsMu.Lock()
		s.pools[m.pool] = struct{}{}
		s.poolsMu.Unlock()
	}
	return m, nil
}

// compileBounded gives up on a compilation after CompileTimeout or when
// ctx is done. wazero compiles with several workers and stops them between
// functions when its context is cancelled; the pass bounds what one
// function may cost (instrument.MaxFramesPerFunction), so a compilation
// given up on ends soon after in the background. key names wasm's content
// ("": its SHA-256 is taken).
func (s *Sandbox) compileBounded(ctx context.Context, wasm []byte, key string) (wazero.CompiledModule, error) {
	if key == "" {
		sum := sha256.Sum256(wasm)
		key = string(sum[:])
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CompileTimeout)
	defer cancel()
	type result struct {
		c   wazero.CompiledModule
		err error
	}
	done := make(chan result, 1)
	go func() {
		// A panic in wazero's compiler must not end the process (the pass
		// refuses every module known to cause one, see FuzzInstrument).
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("wazero panicked compiling the module: %v", p)}
			}
			done <- r
		}()
		mu, _ := s.compiling.LoadOrStore(key, &sync.Mutex{})
		mu.(*sync.Mutex).Lock()
		defer mu.(*sync.Mutex).Unlock()
		wctx := experimental.WithCompilationWorkers(cctx, runtime.GOMAXPROCS(0))
		r.c, r.err = s.rt.CompileModule(wctx, wasm)
	}()
	select {
	case r := <-done:
		if r.err == nil || cctx.Err() == nil {
			return r.c, r.err
		}
	case <-cctx.Done():
		go func() { // close what a late finish compiled
			if r := <-done; r.err == nil {
				_ = r.c.Close(context.Background())
			}
		}()
	}
	if ctx.Err() != nil {
		return nil, classify(ctx, ctx.Err())
	}
	return nil, fmt.Errorf("%w (over %v)", ErrCompileTimeout, s.cfg.CompileTimeout)
}

func (s *Sandbox) validateImports(c wazero.CompiledModule) error {
	for _, def := range c.ImportedFunctions() {
		mod, name, _ := def.Import()
		host := s.rt.Module(mod)
		if (mod != abi.ImportModule && mod != wasiModule) || host == nil {
			return fmt.Errorf("%w: the module imports %s.%s, but packd provides functions of modules %q and %q only (see abi/GUEST-ABI.md)",
				ErrInvalidModule, mod, name, abi.ImportModule, wasiModule)
		}
		provided := host.ExportedFunctionDefinitions()
		want, ok := provided[name] // fuel_refill too: the pass imports it (a module's own import of it is refused by the pass)
		if !ok {
			var names []string
			for n := range provided {
				if n != abi.ImportFuelRefill {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			return fmt.Errorf("%w: the module imports %s.%s, which packd does not provide; %s has %s (see abi/GUEST-ABI.md)",
				ErrInvalidModule, mod, name, mod, strings.Join(names, ", "))
		}
		if !slices.Equal(def.ParamTypes(), want.ParamTypes()) || !slices.Equal(def.ResultTypes(), want.ResultTypes()) {
			return fmt.Errorf("%w: the module imports %s.%s with type %s, but packd's has type %s (see abi/GUEST-ABI.md)",
				ErrInvalidModule, mod, name, signature(def), signature(want))
		}
	}
	return nil
}

// signature writes a function type as the text format does:
// (param i32 i32) (result i32).
func signature(def api.FunctionDefinition) string {
	part := func(kind string, types []api.ValueType) string {
		if len(types) == 0 {
			return ""
		}
		names := make([]string, len(types))
		for i, t := range types {
			names[i] = api.ValueTypeName(t)
		}
		return "(" + kind + " " + strings.Join(names, " ") + ")"
	}
	sig := strings.TrimSpace(part("param", def.ParamTypes()) + " " + part("result", def.ResultTypes()))
	if sig == "" {
		return "()"
	}
	return sig
}

// startExport is what a WASI command exports instead of _initialize.
const startExport = "_start"

func validateExports(c wazero.CompiledModule) error {
	if _, ok := c.ExportedMemories()[abi.ExportMemory]; !ok {
		return fmt.Errorf("%w: module does not export %q", ErrMissingExport, abi.ExportMemory)
	}
	fns := c.ExportedFunctions()
	_, command := fns[startExport]
	if _, reactor := fns[abi.ExportInitialize]; command && !reactor {
		// Go's default build mode: its exports trap until _start has run,
		// and _start runs main and exits.
		return fmt.Errorf("%w: the module is a WASI command (it exports _start, not _initialize), and packd runs reactors: "+
			"build a Go pack with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o pack.wasm .`, a C pack with clang's -mexec-model=reactor", ErrMissingExport)
	}
	for _, name := range []string{abi.ExportABIVersion, abi.ExportDescribe, abi.ExportCall} {
		def, ok := fns[name]
		if !ok {
			return fmt.Errorf("%w: module does not export %q", ErrMissingExport, name)
		}
		if len(def.ParamTypes()) != 0 || len(def.ResultTypes()) != 1 || def.ResultTypes()[0] != api.ValueTypeI32 {
			return fmt.Errorf("%w: %q must have type () -> i32", ErrMissingExport, name)
		}
	}
	return nil
}

// Pooled reports whether calls reuse instances of the module (Config.PoolSize,
// and a module whose instances' state the reset covers).
func (m *Module) Pooled() bool { return m.pool != nil }

// Shape is nil when the module exports everything the guest ABI requires.
func (m *Module) Shape() error { return m.shape }

// Close releases the module's idle instances and the compiled module.
func (m *Module) Close(ctx context.Context) error {
	if m.pool != nil {
		m.sb.poolsMu.Lock()
		delete(m.sb.pools, m.pool)
		m.sb.poolsMu.Unlock()
		m.pool.close()
	}
	return m.compiled.Close(ctx)
}

// corruptCache reports whether a compilation failed on an entry of
// wazero's file cache rather than on the module: wazero's errors for an
// entry it cannot read begin "compilationcache:" (they are not typed), and
// a panic while reading one is reported as any other.
func corruptCache(err error) bool {
	return strings.Contains(err.Error(), "compilationcache:") || strings.Contains(err.Error(), "wazero panicked")
}

// clearCache removes the entries of wazero's file cache under dir (each
// version's directory stays: wazero writes its entries into it) and
// reports how many it removed. Another process's entries go too; they are
// compiled again when next needed.
func clearCache(dir string) int {
	removed := 0
	versions, _ := filepath.Glob(filepath.Join(dir, "wazero-*"))
	for _, v := range versions {
		entries, _ := os.ReadDir(v)
		for _, e := range entries {
			if e.Type().IsRegular() && os.Remove(filepath.Join(v, e.Name())) == nil {
				removed++
			}
		}
	}
	return removed
}
