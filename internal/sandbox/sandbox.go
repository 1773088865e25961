package sandbox

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/kindgi/packd/internal/lineq"
	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
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
	DefaultLoadFuel         = 10_000_000_000
	// tableElementBytes is what one table element costs the host.
	tableElementBytes = 8
	// MaxFuel bounds a budget so that sums of fuel never overflow an int64
	// (see ValidateFuel).
	MaxFuel = 1 << 62
)

// Config configures a Sandbox. The zero value works: no disk cache, the
// defaults above, guest output discarded.
type Config struct {
	// CacheDir holds wazero's compilation cache, each entry sealed and
	// verified whole before its code runs (cacheseal.go); empty keeps it in
	// memory.
	CacheDir string
	// CacheReadOnly uses CacheDir as it is, writing nothing to it: a cache
	// made before (by packd check) on a file system packd cannot write, an
	// image's. Its entries are all checked against their seals when the
	// sandbox is made, and if any does not match, wazero's entries are not
	// used at all (CacheRepaired says so), since none can be removed; a
	// module the cache lacks compiles in memory, at every start.
	CacheReadOnly bool
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
	// SnapshotTapeBytes, when positive, keeps the tape of what the host
	// answered the initialisation of every snapshot (Reply.SnapshotTape),
	// bounded as a call's tape is (at most MaxTapeBytes; past it the tape
	// is truncated, and no call on that snapshot can be replayed). 0 keeps
	// none: a service that records no call holds no tape.
	SnapshotTapeBytes int
	// MemoryBudget bounds the linear memory of all instances together, in
	// bytes (0: no bound). A call whose module's initial memory does not
	// fit fails with ErrMemoryBudget before it starts; a memory.grow past
	// it returns -1. On Linux instance memory is mapped outside the Go
	// heap and returned to the system when the call ends.
	MemoryBudget int64
	// ShareBudgetOf, when set, is a sandbox whose memory budget this one's
	// instances count in, instead of one of their own (MemoryBudget is not
	// read): a sandbox loaded to replace a serving one, while both hold
	// instances, never lets the two together hold more than the budget.
	// Idle pooled instances of either are closed, the older sandbox's
	// first, when memory is wanted.
	ShareBudgetOf *Sandbox
	// PoolSize is how many instances of each module are kept between calls,
	// reset to the module's snapshot after _initialize (see instancePool);
	// 0 gives every call a fresh instance. PoolEvents, if set, is told what
	// happens to pooled instances (for metrics); it must not block.
	PoolSize   int
	PoolEvents func(PoolEvent)
	// CacheRepaired, if set, is told when a compilation found entries of
	// the cache in CacheDir that did not match their seal, or that wazero
	// could not read (why), and removed them (how many), so that the module
	// compiled anew (see Compile).
	CacheRepaired func(why string, removed int)
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
	seals          *cacheSeals // with cache: the seals of its entries
	modCfg         wazero.ModuleConfig
	stdout, stderr *lineq.Queue
	mem            *memBudget // shared with the sandboxes of Config.ShareBudgetOf
	maps           *mappings
	// compiling holds a mutex per module content (its pass entry's name,
	// else its SHA-256; the name is a hash of the module already, and a
	// hash of the instrumented module cost 3 ms a Go module): wazero makes a
	// module loaded from its file cache visible to other compilations of
	// the same bytes before it has finished preparing it (a data race
	// found by the race detector when a pack names one module twice).
	compiling sync.Map
	poolsMu   sync.Mutex
	pools     map[*instancePool]struct{}
	closeOnce sync.Once
	closeErr  error
}

// ValidateFuel says what is wrong with a fuel budget, if anything: one must be
// from 1 to MaxFuel. It is the one check of a budget, for flags, an index's
// limits.fuel and Config alike.
func ValidateFuel(n int64) error {
	if n < 1 || n > MaxFuel {
		return fmt.Errorf("must be a positive integer up to %d", int64(MaxFuel))
	}
	return nil
}

// New starts a runtime with the guest ABI host module and the minimal WASI.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	for _, f := range []int64{cfg.DefaultFuel, cfg.LoadFuel} {
		if err := ValidateFuel(f); f != 0 && err != nil { // 0: the default
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
	if cfg.ShareBudgetOf != nil {
		s.mem = cfg.ShareBudgetOf.mem
		// Only its budget: a sandbox that kept the one it replaces would
		// keep every sandbox before it (each reload's whole pack).
		s.cfg.ShareBudgetOf = nil
	} else {
		s.mem = &memBudget{limit: max(cfg.MemoryBudget, 0)}
	}
	s.pools = map[*instancePool]struct{}{}
	s.maps = newMappings()
	s.stdout, s.stderr = newQueue(cfg.Stdout, "stdout", cfg.DroppedLines), newQueue(cfg.Stderr, "stderr", cfg.DroppedLines)
	// No WithCloseOnContextDone: instrumented code returns to Go through
	// the fuel refill at least once a slice, and the refill stops it when
	// the context is done.
	rc := wazero.NewRuntimeConfig().WithMemoryLimitPages(cfg.MemoryLimitPages - uint32(tablePages))
	if cfg.CacheDir != "" {
		seals, err := openSeals(cfg.CacheDir, cfg.CacheReadOnly)
		if err != nil {
			return nil, fmt.Errorf("sandbox: opening compilation cache: %w", err)
		}
		s.seals = seals
		useCache := true
		if cfg.CacheReadOnly {
			seals.useVersions() // the cache is as it stays
			if bad := seals.checkReadOnly(); bad > 0 {
				useCache = false
				if cfg.CacheRepaired != nil {
					cfg.CacheRepaired(fmt.Sprintf("%d entries of the read-only cache did not match their seal: its compiled code is not used, and modules compile at every start", bad), 0)
				}
			}
		}
		if useCache {
			cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
			switch {
			case err == nil:
				s.cache = cache
				rc = rc.WithCompilationCache(cache)
				if !cfg.CacheReadOnly {
					seals.useVersions() // once wazero has made its directory
				}
			case !cfg.CacheReadOnly: // read-only, one without this wazero's directory has nothing for it
				return nil, fmt.Errorf("sandbox: opening compilation cache: %w", err)
			}
		}
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
	s.mem.join(s)
	return s, nil
}

// orDefault sets *v to def when *v is zero (or negative).
func orDefault[T uint32 | int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Close releases the runtime and every module compiled in it. Safe twice.
func (s *Sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mem.leave(s)
		s.poolsMu.Lock()
		for p := range s.pools {
			p.close()
		}
		s.poolsMu.Unlock()
		// The guests' last lines, a second at most.
		wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = s.stdout.Close(wait)
		_ = s.stderr.Close(wait)
		cancel()
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
// first, until n more bytes fit in the memory budget, and says whether it
// closed any (memBudget.reclaim).
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
			if s.mem.limit > 0 && s.mem.fits(n) {
				return closed
			}
			if p.dropOne(DiscardMemory) {
				closed, more = true, true
			}
		}
	}
	return closed
}

// MemoryInUse is the linear memory instances hold now, in bytes.
func (s *Sandbox) MemoryInUse() int64 { return s.mem.used.Load() }

// MaxModuleBytes is the largest module Compile accepts.
func (s *Sandbox) MaxModuleBytes() int { return s.cfg.MaxModuleBytes }

// MemoryLimitBytes is the linear memory limit of every instance, in bytes
// (Config.MemoryLimitPages).
func (s *Sandbox) MemoryLimitBytes() int64 { return int64(s.cfg.MemoryLimitPages) << 16 }

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
