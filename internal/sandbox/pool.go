package sandbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
)

// instancePool keeps instances of one module between calls (Config.PoolSize).
// The first instance runs _initialize, and its memory and mutable globals
// then are the module's snapshot. After a call that ended well and left the
// memory its size, an instance is reset to the snapshot (the whole memory
// copied back, every mutable global set, the fuel and stack counters
// zeroed) and kept; after anything else it is closed. A module that can
// change a table or drop a segment, or keeps references in mutable globals,
// is not pooled (its instances have state the reset does not cover).
type instancePool struct {
	m *Module
	// idle is a stack, the instance put back last on top: a call takes the
	// instance used most recently, whose memory, page tables and code are
	// still warm in the CPU's caches (a queue would cycle through every
	// instance), and the ones at the bottom are those the janitor closes
	// once traffic falls.
	idleMu sync.Mutex
	idle   []*pooledInstance
	size   int
	// snapLock is held by the call that takes the snapshot: one at a time,
	// and calls that need one wait for it rather than make instances that
	// could not map its image.
	snapLock chan struct{}
	snap     atomic.Pointer[snapshot]
	stop     chan struct{}
	once     sync.Once
	live     atomic.Int64 // instances alive, idle or serving a call
	made     atomic.Int64 // instances made over the pool's life
	// clock is the time in Unix nanoseconds, set by the janitor at each of
	// its rounds: what the pool times (idle instances, a snapshot's age)
	// needs no finer clock, and a call does not read the real one.
	clock atomic.Int64
}

func (p *instancePool) event(ev PoolEvent) {
	if f := p.m.sb.cfg.PoolEvents; f != nil {
		f(ev)
	}
}

func (p *instancePool) discard(pi *pooledInstance, reason PoolReason) {
	p.event(PoolEvent{Kind: PoolDiscard, Reason: reason})
	pi.close()
}

// Debugging hooks, set by the package's tests: verifyResets compares every
// byte of memory and every global with the snapshot after each reset (and
// panics when they differ); afterCall runs on an instance after its call,
// before its reset (a test writes a canary everywhere there); skipResets
// leaves instances as their calls left them.
var (
	verifyResets bool
	afterCall    func(api.Module)
	skipResets   bool // a broken reset, to show that the tests catch one
)

// poolIdleFor is how long an instance may wait in the pool: a pool shrinks
// back once its traffic has gone.
const poolIdleFor = 30 * time.Second

type snapshot struct {
	memory  []byte
	globals []uint64  // in Module.info.Globals order
	env     []string  // the environment _initialize saw (a Go guest keeps it)
	image   *memImage // memory in a sealed memfd, nil where that cannot be
	taken   time.Time
	// tape is what the host answered the initialisation that made it; id
	// the SHA-256 of its memory and globals (ident).
	tape   *Tape
	idOnce sync.Once
	id     string
}

// snapshotMaxAge: a snapshot is taken anew after this long, so that no
// seed drawn during initialisation serves calls for ever.
const snapshotMaxAge = 10 * time.Minute

// pooledInstance is one instance of the pool, with its share of the memory budget
// for as long as it lives.
type pooledInstance struct {
	snap         *snapshot   // the snapshot it is reset to
	since        time.Time   // when it was last put back
	lin          *mmapMemory // its linear memory, when packd mapped it
	mem          *callMemory // its share of the budget, and its call's memory limit
	inst         api.Module
	call         api.Function // kindgi_call, made once: wazero allocates a call stack for each
	state        callState    // the state of its call, and its context: one call at a time
	ctx          stateCtx
	globals      []api.MutableGlobal
	fuel, stack  api.MutableGlobal
	memory       api.Memory
	closeRelease func()
}

// poolable reports whether the reset covers all of a module's state.
func poolable(info instrument.Info) bool { return !info.WritesTablesOrSegments && !info.RefGlobals }

func newInstancePool(m *Module, size int) *instancePool {
	p := &instancePool{m: m, size: size, idle: make([]*pooledInstance, 0, size), stop: make(chan struct{}), snapLock: make(chan struct{}, 1)}
	p.clock.Store(time.Now().UnixNano())
	go p.janitor()
	return p
}

// janitor closes instances idle for longer than poolIdleFor, and takes
// the snapshot anew before it expires.
func (p *instancePool) janitor() {
	every(poolIdleFor/4, p.stop, func(now time.Time) {
		p.clock.Store(now.UnixNano())
		p.trim(now.Add(-poolIdleFor))
		p.refresh(now)
	})
}

// trim closes the idle instances put back before cutoff.
func (p *instancePool) trim(cutoff time.Time) {
	p.idleMu.Lock()
	var old []*pooledInstance
	keep := p.idle[:0]
	for _, pi := range p.idle {
		if pi.since.Before(cutoff) {
			old = append(old, pi)
		} else {
			keep = append(keep, pi)
		}
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.idleMu.Unlock()
	for _, pi := range old {
		p.discard(pi, DiscardIdle)
	}
}

// pop takes the idle instance put back last; nil when there is none.
func (p *instancePool) pop() *pooledInstance {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	pi := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	return pi
}

// dropOne closes the idle instance used least recently, and reports
// whether there was one.
func (p *instancePool) dropOne(reason PoolReason) bool {
	p.idleMu.Lock()
	if len(p.idle) == 0 {
		p.idleMu.Unlock()
		return false
	}
	pi := p.idle[0]
	copy(p.idle, p.idle[1:])
	p.idle[len(p.idle)-1] = nil
	p.idle = p.idle[:len(p.idle)-1]
	p.idleMu.Unlock()
	p.discard(pi, reason)
	return true
}

// call runs kindgi_call in an instance of the pool.
func (p *instancePool) call(ctx context.Context, req Request) (rep Reply, err error) {
	s := p.m.sb
	budget := s.budgetFor(req)
	if err := ctx.Err(); err != nil {
		return Reply{}, classify(ctx, err)
	}
	now := time.Unix(0, p.clock.Load())
	pi, hit, err := p.get(ctx, req.Env, now, budget)
	if err != nil {
		return Reply{}, err
	}
	rep.Instance = InstanceMiss
	if hit {
		rep.Instance = InstanceHit
	}
	if req.Record != nil {
		rep.SnapshotID, rep.SnapshotTape = pi.snap.ident(), pi.snap.tape
	}
	if req.MemoryLimit > 0 && int64(pi.memory.Size()) > req.MemoryLimit {
		p.put(pi, now)
		return rep, fmt.Errorf("%w: the module's memory after initialisation is %d bytes, the limit %d", ErrMemoryLimit, pi.memory.Size(), req.MemoryLimit)
	}
	if !pi.mem.attach(req.Account, int64(pi.memory.Size())) {
		p.put(pi, now)
		return rep, ErrMemoryShare
	}
	pi.mem.limit = req.MemoryLimit
	st := &pi.state
	pi.mem.state = st
	s.initState(st, req, budget)
	keep := false
	defer func() {
		err = s.settle(&rep, err, st, budget, pi.memory, pi.fuel, pi.stack)
		pi.mem.detach() // before another call can take the instance
		keep = keep && err == nil
		switch {
		case !keep:
			p.discard(pi, DiscardError)
		case int(pi.memory.Size()) != len(pi.snap.memory) && !p.shrink(pi):
			p.discard(pi, DiscardGrown)
		default:
			if afterCall != nil {
				afterCall(pi.inst)
			}
			pages, how := p.reset(pi)
			rep.ResetSeconds = (monotonic() - st.ended).Seconds() // from the call's end
			p.event(PoolEvent{Kind: PoolReset, Reason: how, Seconds: rep.ResetSeconds, Pages: pages})
			if verifyResets {
				p.verify(pi)
			}
			p.put(pi, now)
		}
	}()
	pi.fuel.Set(0)
	pi.stack.Set(0)
	st.fuel, st.fuelOf = pi.fuel, pi.inst
	pi.ctx = stateCtx{Context: ctx, st: st}
	st.bind(ctx)
	rep.Status, rep.Body, err = callExport(&pi.ctx, pi.call, abi.ExportCall, st)
	pi.ctx = stateCtx{} // keeps nothing of the call
	keep = err == nil
	return rep, err
}

// get takes an idle instance (hit), or makes one (on a call's fuel
// budget: fresh).
func (p *instancePool) get(ctx context.Context, env []string, now time.Time, budget int64) (pi *pooledInstance, hit bool, err error) {
	p.expire(now.Add(-snapshotMaxAge))
	if pi := p.pop(); pi != nil {
		p.event(PoolEvent{Kind: PoolHit})
		return pi, true, nil
	}
	p.event(PoolEvent{Kind: PoolMiss})
	pi, err = p.fresh(ctx, env, budget)
	return pi, false, err
}

// serves reports whether the pool can serve a call with this environment:
// its snapshot's init saw the environment, and a guest may keep what it
// read then (Go does). Before the snapshot, any environment is its own.
func (p *instancePool) serves(env []string) bool {
	snap := p.snap.Load()
	return snap == nil || slices.Equal(snap.env, env)
}

// put keeps a reset instance, or closes it when the pool is full; now
// is when its call started.
func (p *instancePool) put(pi *pooledInstance, now time.Time) {
	if pi.snap != p.snap.Load() {
		p.discard(pi, DiscardOld)
		return
	}
	pi.since = now
	p.keep(pi)
}

// keep puts an instance in the pool as it is, or closes it when the pool
// is full.
func (p *instancePool) keep(pi *pooledInstance) {
	p.idleMu.Lock()
	full := len(p.idle) >= p.size
	if !full {
		p.idle = append(p.idle, pi)
	}
	p.idleMu.Unlock()
	if full {
		p.discard(pi, DiscardFull)
	}
}

func (pi *pooledInstance) close() { pi.closeRelease() }

// close stops the janitor and closes every idle instance, and the snapshot
// image (mappings of it keep it alive).
func (p *instancePool) close() {
	p.once.Do(func() {
		close(p.stop)
		p.snapLock <- struct{}{}
		if snap := p.snap.Load(); snap != nil {
			snap.image.close()
		}
		<-p.snapLock
	})
	for pi := p.pop(); pi != nil; pi = p.pop() {
		pi.close()
	}
}
