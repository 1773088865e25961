package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/lineq"
	"github.com/kindgi/packd/sandbox/internal/instrument"
)

// Defaults for a zero Config.
const (
	DefaultMemoryLimitPages = 4096     // 256 MiB
	DefaultMaxResponseBytes = 16 << 20 // 16 MiB
	DefaultMaxLineBytes     = 16 << 10 // 16 KiB
	DefaultMaxOutputBytes   = 1 << 20  // 1 MiB of stdout+stderr lines per call
	DefaultFuel             = 10_000_000_000
	DefaultFuelSlice        = 1_000_000
	DefaultMaxTableElements = 1 << 20  // 8 MiB of references
	DefaultMaxModuleBytes   = 64 << 20 // 64 MiB
	DefaultCompileTimeout   = 2 * time.Minute
	DefaultLoadTimeout      = 5 * time.Second
	DefaultLoadFuel         = 2_000_000_000
	// tableElementBytes is what one table element costs the host.
	tableElementBytes = 8
	// MaxFuel bounds a budget so that sums of fuel never overflow an int64
	// (see CheckFuel).
	MaxFuel = 1 << 62
)

// Config configures a Sandbox. The zero value works: no disk cache, the
// defaults above, guest output discarded.
type Config struct {
	// CacheDir holds wazero's compilation cache; empty keeps it in memory.
	CacheDir string
	// MemoryLimitPages bounds every instance's linear memory (64 KiB pages).
	MemoryLimitPages uint32
	// MaxResponseBytes bounds what one call may write with response_write.
	MaxResponseBytes int
	// Stdout and Stderr receive the guests' stdout and stderr lines (of
	// calls whose Request has no Output, and of load-time code), through a
	// bounded queue each: a guest never waits for a slow reader; lines that
	// do not fit are dropped, counted by DroppedLines (if set) and reported
	// in the stream.
	Stdout, Stderr io.Writer
	DroppedLines   func(stream string)
	// MaxLineBytes cuts longer guest lines; MaxOutputBytes bounds what one
	// call forwards on each stream.
	MaxLineBytes, MaxOutputBytes int
	// DefaultFuel is a call's fuel budget when its Request names none;
	// FuelSlice is how much the guest gets at a time: between two refills,
	// a deadline or a cancel cannot stop it.
	DefaultFuel, FuelSlice int64
	// MaxTableElements bounds the elements of an instance's tables, all
	// together; they are counted against the memory limit (8 bytes each),
	// so linear memory may grow to the limit less what the tables may
	// take. Zero: DefaultMaxTableElements, or an eighth of the memory
	// limit when that is less.
	MaxTableElements uint32
	// MaxModuleBytes refuses larger modules before reading them;
	// CompileTimeout gives up on a module whose compilation takes longer.
	MaxModuleBytes int
	CompileTimeout time.Duration
	// LoadTimeout and LoadFuel bound the guest code that runs at load
	// (start function, _initialize, kindgi_abi_version, kindgi_describe).
	LoadTimeout time.Duration
	LoadFuel    int64
	// MemoryBudget bounds the linear memory of all instances together, in
	// bytes (0: no bound). A call whose module's initial memory does not
	// fit fails with ErrMemoryBudget before it starts; a memory.grow past
	// it returns -1. On Linux instance memory is mapped outside the Go
	// heap and returned to the system when the call ends.
	MemoryBudget int64
	// PoolSize is how many instances of each module are kept between calls,
	// reset to the module's snapshot after _initialize (see instancePool);
	// 0 gives every call a fresh instance. PoolEvents, if set, is told what
	// happens to pooled instances (for metrics); it must not block.
	PoolSize   int
	PoolEvents func(PoolEvent)
	// MaxStackBytes bounds a call's wasm stack, estimated from the frames
	// of the functions open (8 bytes per param, local and result, plus 64);
	// a call past it traps with "stack overflow". 0: 8 MiB.
	MaxStackBytes uint32
}

// Sandbox owns a wazero runtime. It is safe for concurrent use.
type Sandbox struct {
	cfg            Config
	rt             wazero.Runtime
	cache          wazero.CompilationCache
	modCfg         wazero.ModuleConfig
	stdout, stderr *lineq.Queue
	mem            memBudget
	maps           *mappings
	// compiling holds a mutex per module content (sha256): wazero makes a
	// module loaded from its file cache visible to other compilations of
	// the same bytes before it has finished preparing it (a data race
	// found by the race detector when a pack names one module twice).
	compiling sync.Map
	poolsMu   sync.Mutex
	pools     map[*instancePool]struct{}
	closeOnce sync.Once
	closeErr  error
}

// CheckFuel says what is wrong with a fuel budget, if anything: one must be
// from 1 to MaxFuel. It is the one check of a budget, for flags, an index's
// limits.fuel and Config alike.
func CheckFuel(n int64) error {
	if n < 1 || n > MaxFuel {
		return fmt.Errorf("must be a positive integer up to %d", int64(MaxFuel))
	}
	return nil
}

// New starts a runtime with the guest ABI host module and the minimal WASI.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	for _, f := range []int64{cfg.DefaultFuel, cfg.LoadFuel} {
		if err := CheckFuel(f); f != 0 && err != nil { // 0: the default
			return nil, fmt.Errorf("sandbox: a fuel budget %w", err)
		}
	}
	orDefault(&cfg.MemoryLimitPages, DefaultMemoryLimitPages)
	if cfg.MemoryLimitPages > 65536 {
		return nil, fmt.Errorf("sandbox: memory limit of %d pages is over the 4 GiB of wasm32", cfg.MemoryLimitPages)
	}
	orDefault(&cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	orDefault(&cfg.MaxLineBytes, DefaultMaxLineBytes)
	orDefault(&cfg.MaxOutputBytes, DefaultMaxOutputBytes)
	orDefault(&cfg.DefaultFuel, DefaultFuel)
	orDefault(&cfg.FuelSlice, DefaultFuelSlice)
	orDefault(&cfg.LoadFuel, DefaultLoadFuel)
	orDefault(&cfg.LoadTimeout, DefaultLoadTimeout)
	orDefault(&cfg.MaxModuleBytes, DefaultMaxModuleBytes)
	orDefault(&cfg.CompileTimeout, DefaultCompileTimeout)
	orDefault(&cfg.MaxStackBytes, instrument.DefaultMaxStackBytes)
	limitBytes := uint64(cfg.MemoryLimitPages) * 65536
	if cfg.MaxTableElements == 0 {
		cfg.MaxTableElements = uint32(min(DefaultMaxTableElements, limitBytes/8/tableElementBytes))
	}
	tablePages := (uint64(cfg.MaxTableElements)*tableElementBytes + 65535) / 65536
	if tablePages >= uint64(cfg.MemoryLimitPages) {
		return nil, fmt.Errorf("sandbox: tables of %d elements take the whole memory limit of %d pages", cfg.MaxTableElements, cfg.MemoryLimitPages)
	}
	s := &Sandbox{cfg: cfg}
	s.mem.limit = max(cfg.MemoryBudget, 0)
	s.pools = map[*instancePool]struct{}{}
	s.mem.reclaim = s.reclaim
	s.maps = newMappings()
	s.stdout, s.stderr = newQueue(cfg.Stdout, "stdout", cfg.DroppedLines), newQueue(cfg.Stderr, "stderr", cfg.DroppedLines)
	// No WithCloseOnContextDone: instrumented code returns to Go through
	// the fuel refill at least once a slice, and the refill stops it when
	// the context is done.
	rc := wazero.NewRuntimeConfig().WithMemoryLimitPages(cfg.MemoryLimitPages - uint32(tablePages))
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("sandbox: opening compilation cache: %w", err)
		}
		s.cache = cache
		rc = rc.WithCompilationCache(cache)
	}
	s.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	if err := instantiateKindgi(ctx, s.rt); err != nil {
		_ = s.Close(ctx)
		return nil, fmt.Errorf("sandbox: instantiating host module: %w", err)
	}
	if err := instantiateWASI(ctx, s.rt); err != nil {
		_ = s.Close(ctx)
		return nil, fmt.Errorf("sandbox: instantiating wasi: %w", err)
	}
	s.modCfg = wazero.NewModuleConfig().WithName("").WithStartFunctions().WithRandSource(rand.Reader)
	return s, nil
}

// orDefault sets *v to def when *v is zero (or negative).
func orDefault[T uint32 | int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// newQueue puts a line queue in front of w (nil: discard).
func newQueue(w io.Writer, stream string, dropped func(string)) *lineq.Queue {
	if w == nil {
		w = io.Discard
	}
	var onDrop func()
	if dropped != nil {
		onDrop = func() { dropped(stream) }
	}
	return lineq.New(w, 0, nil, onDrop)
}

// Close releases the runtime and every module compiled in it. Safe twice.
func (s *Sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.poolsMu.Lock()
		for p := range s.pools {
			p.close()
		}
		s.poolsMu.Unlock()
		s.stdout.Close(time.Second)
		s.stderr.Close(time.Second)
		if s.rt != nil {
			s.closeErr = s.rt.Close(ctx)
		}
		s.maps.close()
		if s.cache != nil {
			s.closeErr = errors.Join(s.closeErr, s.cache.Close(ctx))
		}
	})
	return s.closeErr
}

// reclaim closes idle pooled instances, the longest idle of each pool
// first, until n more bytes fit in the memory budget (memBudget.reclaim).
func (s *Sandbox) reclaim(n int64) bool {
	s.poolsMu.Lock()
	pools := make([]*instancePool, 0, len(s.pools))
	for p := range s.pools {
		pools = append(pools, p)
	}
	s.poolsMu.Unlock()
	closed := false
	for more := true; more; {
		more = false
		for _, p := range pools {
			if s.mem.limit > 0 && s.mem.used.Load()+n <= s.mem.limit {
				return closed
			}
			if p.dropOne(DiscardMemory) {
				closed, more = true, true
			}
		}
	}
	return closed
}

// PoolInstances is how many instances of the module live now, idle or
// serving a call (0 when calls get a fresh instance).
func (m *Module) PoolInstances() int {
	if m.pool == nil {
		return 0
	}
	return int(m.pool.live.Load())
}

// MemoryInUse is the linear memory instances hold now, in bytes.
func (s *Sandbox) MemoryInUse() int64 { return s.mem.used.Load() }

// MaxModuleBytes is the largest module Compile accepts.
func (s *Sandbox) MaxModuleBytes() int { return s.cfg.MaxModuleBytes }

// MemoryLimitBytes is the linear memory limit of every instance, in bytes
// (Config.MemoryLimitPages).
func (s *Sandbox) MemoryLimitBytes() int64 { return int64(s.cfg.MemoryLimitPages) << 16 }

// Module is a compiled pack module. Calls on it may run concurrently.
type Module struct {
	sb       *Sandbox
	compiled wazero.CompiledModule
	minBytes int64 // its memory's initial size
	info     instrument.Info
	pool     *instancePool // nil: a fresh instance per call
	hasInit  bool
	http     bool  // it imports http_request: its calls may send requests
	shape    error // why the module does not implement the guest ABI, or nil
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

// Compile validates, instruments (fuel) and compiles a module once. A module
// that imports anything packd does not provide fails here; a module that
// lacks the guest ABI exports compiles, and Shape, Describe and Call report
// ErrMissingExport. A module over Config.MaxModuleBytes, or whose
// compilation takes longer than Config.CompileTimeout, is refused.
func (s *Sandbox) Compile(ctx context.Context, wasm []byte) (*Module, error) {
	if len(wasm) > s.cfg.MaxModuleBytes {
		return nil, fmt.Errorf("compiling module: %w: %d bytes is over the limit of %d", ErrInvalidModule, len(wasm), s.cfg.MaxModuleBytes)
	}
	if err := instrument.Prescan(wasm); err != nil {
		return nil, fmt.Errorf("compiling module: %w: %w", ErrInvalidModule, err)
	}
	// The pass checks every index and section end of the module as written
	// (nothing invalid may resolve to what it adds); wazero then validates
	// the result. Its error says what is wrong with the module itself.
	metered, info, err := instrument.InstrumentInfo(wasm, instrument.Options{MaxTableElements: s.cfg.MaxTableElements, FunctionImportsOnly: true, MaxStackBytes: s.cfg.MaxStackBytes})
	if err != nil {
		return nil, fmt.Errorf("compiling module: %w: %w", ErrInvalidModule, err)
	}
	compiled, err := s.compileBounded(ctx, metered)
	if errors.Is(err, ErrCompileTimeout) || errors.Is(err, ErrDeadline) || errors.Is(err, ErrCancelled) {
		return nil, fmt.Errorf("compiling module: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("compiling module: %w: %w", ErrInvalidModule, err)
	}
	if err := s.checkImports(compiled); err != nil {
		_ = compiled.Close(ctx)
		return nil, err
	}
	m := &Module{sb: s, compiled: compiled, info: info}
	for _, def := range compiled.ImportedFunctions() {
		if mod, name, _ := def.Import(); mod == abi.ImportModule && name == abi.ImportHTTPRequest {
			m.http = true
		}
	}
	for _, def := range compiled.ExportedMemories() {
		m.minBytes = int64(def.Min()) * 65536
	}
	exports := compiled.ExportedFunctions()
	if def, ok := exports[abi.ExportInitialize]; ok && len(def.ParamTypes()) == 0 && len(def.ResultTypes()) == 0 {
		m.hasInit = true
	}
	m.shape = checkExports(compiled)
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
// given up on ends soon after in the background.
func (s *Sandbox) compileBounded(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
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
		mu, _ := s.compiling.LoadOrStore(sha256.Sum256(wasm), &sync.Mutex{})
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

func (s *Sandbox) checkImports(c wazero.CompiledModule) error {
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

func checkExports(c wazero.CompiledModule) error {
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

// Reply is what a guest answered, and the fuel the call burnt.
type Reply struct {
	Status   abi.Status
	Body     []byte
	FuelUsed int64
	// MemoryBytes is the instance's linear memory when the call ended.
	MemoryBytes int64
}

// Description is what a module says it serves (abi.Description).
type Description = abi.Description

// Describe runs the module once to ask which tool and check ids it serves,
// under Config.LoadTimeout and Config.LoadFuel.
func (m *Module) Describe(ctx context.Context) (Description, error) {
	var d Description
	if m.shape != nil {
		return d, m.shape
	}
	lctx, cancel := context.WithTimeout(ctx, m.sb.cfg.LoadTimeout)
	defer cancel()
	var said loadStderr
	rep, err := m.run(lctx, abi.ExportDescribe, Request{Fuel: m.sb.cfg.LoadFuel, Output: func(stream string, line []byte) {
		if stream == "stderr" {
			said.add(line)
			_, _ = m.sb.stderr.Write(line)
		} else {
			_, _ = m.sb.stdout.Write(line)
		}
	}})
	if err != nil && !errors.Is(err, ErrLoadLimit) {
		if why := said.why(); why != "" {
			err = fmt.Errorf("%w; the guest wrote: %s", err, why)
		}
	}
	switch {
	case errors.Is(err, ErrDeadline) && ctx.Err() == nil:
		return d, fmt.Errorf("%w: its start function, _initialize and kindgi_describe ran over the load timeout of %v", ErrLoadLimit, m.sb.cfg.LoadTimeout)
	case errors.Is(err, ErrOutOfFuel):
		return d, fmt.Errorf("%w: its start function, _initialize and kindgi_describe ran over the load fuel of %d", ErrLoadLimit, m.sb.cfg.LoadFuel)
	case err != nil:
		return d, err
	}
	if rep.Status != abi.StatusOK {
		return d, fmt.Errorf("%s returned status %d", abi.ExportDescribe, rep.Status)
	}
	if err := json.Unmarshal(rep.Body, &d); err != nil {
		return d, fmt.Errorf("reading %s answer: %w", abi.ExportDescribe, err)
	}
	return d, nil
}

// Request is one call: the request message the guest reads, the whole
// environment it sees (KEY=VALUE), and its fuel budget (0: the default).
// Output, when set, receives the call's whole lines (stream "stdout" or
// "stderr", each line ending in a newline) instead of Config.Stdout and
// Config.Stderr; it is called on the guest's goroutine and must not block.
// Fresh asks for a fresh instance even when the module's instances are
// pooled.
type Request struct {
	Body   []byte
	Env    []string
	Fuel   int64
	Output func(stream string, line []byte)
	Fresh  bool
	// Egress sends the call's outbound HTTP requests; nil refuses them
	// (the guest's http_request answers network-not-allowed).
	Egress Egress
	// MemoryLimit bounds the call's linear memory, in bytes, below
	// Config.MemoryLimitPages (0: that limit alone): its memory.grow past
	// it returns -1, and an instance already over it does not run the call
	// (ErrMemoryLimit).
	MemoryLimit int64
}

// budgetFor is a call's fuel budget: the request's, else the default.
func (s *Sandbox) budgetFor(req Request) int64 {
	if req.Fuel <= 0 {
		return s.cfg.DefaultFuel
	}
	return min(req.Fuel, MaxFuel)
}

// settle ends a call: it flushes the guest's last lines, fills in the fuel
// used and the memory from the instance's counters, names the pass's stack
// trap, and returns the call's error (a broken guest when the fuel used
// falls outside the budget). mem, fuel and stack are nil when no instance
// ran.
func (s *Sandbox) settle(rep *Reply, err error, st *callState, budget int64, mem api.Memory, fuel, stack api.Global) error {
	st.stdout.Flush()
	st.stderr.Flush()
	rep.FuelUsed = budget - st.fuelLeft
	if fuel != nil {
		rep.FuelUsed -= max(int64(fuel.Get()), 0)
	}
	if mem != nil {
		rep.MemoryBytes = int64(mem.Size())
	}
	// The pass's stack check traps with unreachable; say what it is.
	if err != nil && stack != nil && uint32(stack.Get()) > s.cfg.MaxStackBytes {
		err = stackOverflow(err)
	}
	// Only the pass's code writes the counter, so this cannot happen; if it
	// ever did, the guest's answer is not to be trusted.
	if used := rep.FuelUsed; used < 0 || used > budget {
		*rep = Reply{FuelUsed: min(max(used, 0), budget)}
		err = &ABIError{Func: instrument.GlobalExport, Reason: fmt.Sprintf("fuel used %d is outside the budget of %d", used, budget)}
	}
	return err
}

// stackOverflow names a trap of the pass's stack check.
func stackOverflow(err error) error {
	var trap *TrapError
	if errors.As(err, &trap) {
		return &TrapError{Message: "stack overflow", Stack: trap.Stack}
	}
	return err
}

// newState is a call's state, with a fuel budget.
func (s *Sandbox) newState(req Request, budget int64) *callState {
	st := new(callState)
	s.initState(st, req, budget)
	return st
}

// initState sets st to a call's state, with a fuel budget.
func (s *Sandbox) initState(st *callState, req Request, budget int64) {
	*st = callState{
		request:   req.Body,
		maxResp:   s.cfg.MaxResponseBytes,
		env:       req.Env,
		egress:    req.Egress,
		stdout:    lineWriter{sink: sinkFor(req.Output, "stdout", s.stdout), maxLine: s.cfg.MaxLineBytes, budget: s.cfg.MaxOutputBytes},
		stderr:    lineWriter{sink: sinkFor(req.Output, "stderr", s.stderr), maxLine: s.cfg.MaxLineBytes, budget: s.cfg.MaxOutputBytes},
		fuelLeft:  budget,
		fuelSlice: s.cfg.FuelSlice,
	}
}

// lineSink is where a call's lines on a stream go: the call's own output
// function when it has one, else the sandbox's queue. It never blocks.
type lineSink struct {
	output func(stream string, line []byte)
	stream string
	q      *lineq.Queue
}

func sinkFor(output func(string, []byte), stream string, q *lineq.Queue) lineSink {
	return lineSink{output: output, stream: stream, q: q}
}

func (s lineSink) emit(line []byte) {
	if s.output != nil {
		s.output(s.stream, line)
		return
	}
	_, _ = s.q.Write(line)
}

// Call runs kindgi_call in an instance of its own: a pooled one reset to the
// module's snapshot when the module pools (Config.PoolSize) and the request
// allows it, else a fresh one. Reply.FuelUsed is set whatever the outcome.
func (m *Module) Call(ctx context.Context, req Request) (Reply, error) {
	if m.shape != nil {
		return Reply{}, m.shape
	}
	if m.pool != nil && !req.Fresh && m.pool.serves(req.Env) {
		return m.pool.call(ctx, req)
	}
	return m.run(ctx, abi.ExportCall, req)
}

func (m *Module) run(ctx context.Context, export string, req Request) (rep Reply, err error) {
	s := m.sb
	budget := s.budgetFor(req)
	st := s.newState(req, budget)
	var inst api.Module
	defer func() {
		if inst != nil {
			err = s.settle(&rep, err, st, budget, inst.Memory(), inst.ExportedGlobal(instrument.GlobalExport), inst.ExportedGlobal(instrument.StackExport))
			_ = inst.Close(context.Background())
		} else {
			err = s.settle(&rep, err, st, budget, nil, nil, nil)
		}
	}()
	if err := ctx.Err(); err != nil {
		return rep, classify(ctx, err)
	}
	if req.MemoryLimit > 0 && m.minBytes > req.MemoryLimit {
		return rep, fmt.Errorf("%w: the module's initial memory is %d bytes, the limit %d", ErrMemoryLimit, m.minBytes, req.MemoryLimit)
	}
	// The module's initial memory is reserved before it is instantiated.
	mem := &callMemory{budget: &s.mem, maps: s.maps}
	if !mem.take(m.minBytes) {
		return rep, ErrMemoryBudget
	}
	mem.prepaid = m.minBytes
	defer mem.release()
	mem.limit = req.MemoryLimit
	ctx = experimental.WithMemoryAllocator(ctx, mem.allocator())
	ctx = context.WithValue(ctx, stateKey{}, st)
	inst, err = s.instantiate(ctx, m)
	if err != nil {
		inst = nil
		if ctx.Err() != nil || errors.Is(err, ErrOutOfFuel) {
			return rep, classify(ctx, err)
		}
		return rep, fmt.Errorf("instantiating module: %w", err)
	}
	if m.hasInit {
		if _, err := inst.ExportedFunction(abi.ExportInitialize).Call(ctx); err != nil {
			if export == abi.ExportDescribe { // at load: say which part failed
				return rep, fmt.Errorf("%s: %w", abi.ExportInitialize, classify(ctx, err))
			}
			return rep, classify(ctx, err)
		}
	}
	if export == abi.ExportDescribe {
		res, err := inst.ExportedFunction(abi.ExportABIVersion).Call(ctx)
		if err != nil {
			return rep, classify(ctx, err)
		}
		v := int32(res[0])
		if !abi.Serves(v) {
			return rep, &ABIError{Func: abi.ExportABIVersion, Reason: fmt.Sprintf("guest ABI version %d, packd speaks %d", v, abi.GuestABIVersion)}
		}
		m.abiVersion.Store(v)
	}
	rep.Status, rep.Body, err = callExport(ctx, inst.ExportedFunction(export), export, st)
	return rep, err
}

// instantiate makes an instance of m; a panic in wazero becomes an error.
func (s *Sandbox) instantiate(ctx context.Context, m *Module) (inst api.Module, err error) {
	defer func() {
		if p := recover(); p != nil {
			inst, err = nil, fmt.Errorf("wazero panicked instantiating the module: %v", p)
		}
	}()
	return s.rt.InstantiateModule(ctx, m.compiled, s.modCfg)
}

// callExport calls a guest ABI export (ctx carries st) and checks what it
// returned: a known status, and a response where one is due.
func callExport(ctx context.Context, fn api.Function, export string, st *callState) (abi.Status, []byte, error) {
	res, err := fn.Call(ctx)
	if err != nil {
		return 0, nil, classify(ctx, err)
	}
	status := abi.Status(int32(res[0]))
	switch status {
	case abi.StatusOK, abi.StatusThrown:
		if !st.wrote {
			return status, nil, ErrNoResponse
		}
	case abi.StatusNoHandler:
	default:
		return status, nil, &ABIError{Func: export, Reason: fmt.Sprintf("returned unknown status %d", status)}
	}
	return status, st.response, nil
}

// every calls fn with the time every period until stop closes.
func every(period time.Duration, stop <-chan struct{}, fn func(now time.Time)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			fn(now)
		}
	}
}
