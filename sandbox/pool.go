package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/sandbox/internal/instrument"
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

// janitor closes instances idle for longer than poolIdleFor.
func (p *instancePool) janitor() {
	every(poolIdleFor/4, p.stop, func(now time.Time) {
		p.clock.Store(now.UnixNano())
		p.trim(now.Add(-poolIdleFor))
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
	pi, err := p.get(ctx, req.Env, now, budget)
	if err != nil {
		return Reply{}, err
	}
	if req.MemoryLimit > 0 && int64(pi.memory.Size()) > req.MemoryLimit {
		p.put(pi, now)
		return Reply{}, fmt.Errorf("%w: the module's memory after initialisation is %d bytes, the limit %d", ErrMemoryLimit, pi.memory.Size(), req.MemoryLimit)
	}
	pi.mem.limit = req.MemoryLimit
	st := &pi.state
	s.initState(st, req, budget)
	keep := false
	defer func() {
		err = s.settle(&rep, err, st, budget, pi.memory, pi.fuel, pi.stack)
		keep = keep && err == nil
		switch {
		case !keep:
			p.discard(pi, DiscardError)
		case int(pi.memory.Size()) != len(pi.snap.memory):
			p.discard(pi, DiscardGrown)
		default:
			if afterCall != nil {
				afterCall(pi.inst)
			}
			if s.cfg.PoolEvents != nil {
				start := time.Now()
				pages, how := p.reset(pi)
				p.event(PoolEvent{Kind: PoolReset, Reason: how, Seconds: time.Since(start).Seconds(), Pages: pages})
			} else {
				p.reset(pi)
			}
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

// get takes an idle instance, or makes one (on a call's fuel budget: fresh).
func (p *instancePool) get(ctx context.Context, env []string, now time.Time, budget int64) (*pooledInstance, error) {
	p.expire(now.Add(-snapshotMaxAge))
	if pi := p.pop(); pi != nil {
		p.event(PoolEvent{Kind: PoolHit})
		return pi, nil
	}
	p.event(PoolEvent{Kind: PoolMiss})
	return p.fresh(ctx, env, budget)
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

// fresh instantiates the module for a call whose fuel budget is budget,
// under its deadline (ctx's). The first instance runs _initialize and
// becomes the snapshot: that is the module's load-time work, under the
// load-time limits (within the call's deadline). The others are set to it,
// and what their instantiation runs (a start function) is the call's:
// on its fuel, at most the load-time fuel.
func (p *instancePool) fresh(ctx context.Context, env []string, budget int64) (*pooledInstance, error) {
	m, s := p.m, p.m.sb
	snapped := p.snap.Load()
	taker := false // this call takes the snapshot, and holds snapLock
	if snapped == nil {
		select {
		case p.snapLock <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("instantiating module: waiting for its snapshot: %w", classify(ctx, ctx.Err()))
		}
		if snapped = p.snap.Load(); snapped == nil {
			taker = true
		} else {
			<-p.snapLock // taken while this call waited
		}
	}
	release := func() {
		if taker {
			taker = false
			<-p.snapLock
		}
	}
	defer release()
	mem := &callMemory{budget: &s.mem, maps: s.maps}
	if snapped != nil {
		mem.image = snapped.image
	}
	if !mem.take(m.minBytes) {
		return nil, ErrMemoryBudget
	}
	mem.prepaid = m.minBytes
	lctx, cancel := context.WithTimeout(ctx, s.cfg.LoadTimeout)
	defer cancel()
	fuel := s.cfg.LoadFuel
	if !taker {
		fuel = min(fuel, budget)
	}
	st := s.newState(Request{Env: env}, fuel)
	lctx = context.WithValue(lctx, stateKey{}, st)
	st.bind(lctx)
	lctx = experimental.WithMemoryAllocator(lctx, mem.allocator())
	inst, err := s.instantiate(lctx, m)
	mem.release()
	if err != nil {
		return nil, fmt.Errorf("instantiating module: %w", classify(lctx, err))
	}
	p.live.Add(1)
	p.made.Add(1)
	pi := &pooledInstance{inst: inst, call: inst.ExportedFunction(abi.ExportCall), lin: mem.linear, mem: mem, memory: inst.Memory(), closeRelease: func() {
		_ = inst.Close(context.Background())
		p.live.Add(-1)
	}}
	var ok bool
	if pi.fuel, ok = inst.ExportedGlobal(instrument.GlobalExport).(api.MutableGlobal); !ok {
		pi.close()
		return nil, errors.New("instantiating module: no fuel counter")
	}
	pi.stack, ok = inst.ExportedGlobal(instrument.StackExport).(api.MutableGlobal)
	if !ok || pi.memory == nil {
		pi.close()
		return nil, errors.New("instantiating module: no stack counter or memory")
	}
	for _, g := range m.info.Globals {
		mg, ok := inst.ExportedGlobal(instrument.GlobalPrefix + strconv.FormatUint(uint64(g), 10)).(api.MutableGlobal)
		if !ok {
			pi.close()
			return nil, errors.New("instantiating module: a mutable global is not exported")
		}
		pi.globals = append(pi.globals, mg)
	}
	if taker {
		snap, err := p.takeSnapshot(lctx, pi, env)
		pi.snap = snap
		image := snap != nil && snap.image != nil
		release()
		switch {
		case err != nil:
			pi.close()
			return nil, err
		case image: // serve from an instance that maps the image instead
			pi.close()
			return p.fresh(ctx, env, budget)
		}
		return pi, nil
	}
	pi.snap = p.snap.Load()
	if pi.snap == nil { // dropped (expired) meanwhile
		pi.close()
		return p.fresh(ctx, env, budget)
	}
	if pi.snap != snapped && pi.snap.image != nil {
		// Taken (anew) while this instance was made: its memory does not
		// map the image, and resetting it would copy the whole memory.
		pi.close()
		return p.fresh(ctx, env, budget)
	}
	if delta := (uint32(len(pi.snap.memory)) - pi.memory.Size()) / 65536; delta > 0 {
		if _, ok := pi.memory.Grow(delta); !ok {
			pi.close()
			return nil, ErrMemoryBudget
		}
	}
	if pi.memory.Size() != uint32(len(pi.snap.memory)) {
		pi.close()
		return nil, errors.New("instantiating module: its memory does not match the snapshot")
	}
	// A mapping of the image reads as the snapshot once what instantiation
	// wrote (data segments) is dropped.
	if pi.lin != nil && pi.lin.image != nil && revert(pi.lin.buf, pi.lin.image) == nil {
		p.resetGlobals(pi)
		return pi, nil
	}
	p.reset(pi)
	return pi, nil
}

// expire drops a snapshot taken before cutoff: the next instance takes a
// new one, instances of the old one are closed when they come back, and
// the old image is closed (mappings of it keep it alive).
func (p *instancePool) expire(cutoff time.Time) {
	old := p.snap.Load()
	if old == nil || !old.taken.Before(cutoff) || !p.snap.CompareAndSwap(old, nil) {
		return
	}
	old.image.close()
	p.trim(time.Now().Add(time.Hour)) // every idle instance is of the old one
}

// takeSnapshot runs _initialize in pi and keeps what it left (snapLock
// held: one snapshot is taken at a time).
func (p *instancePool) takeSnapshot(ctx context.Context, pi *pooledInstance, env []string) (*snapshot, error) {
	if p.m.hasInit {
		if _, err := pi.inst.ExportedFunction(abi.ExportInitialize).Call(ctx); err != nil {
			return nil, fmt.Errorf("initializing module: %w", classify(ctx, err))
		}
	}
	b, _ := pi.memory.Read(0, pi.memory.Size())
	snap := &snapshot{memory: append([]byte(nil), b...), env: slices.Clone(env), taken: time.Now()}
	for _, g := range pi.globals {
		snap.globals = append(snap.globals, g.Get())
	}
	if ownMemory() {
		snap.image = newMemImage(snap.memory)
	}
	p.snap.Store(snap)
	return snap, nil
}

// reset sets an instance to the snapshot: every byte of memory (copying
// back only the pages the call wrote when its memory maps the snapshot
// image and the kernel can say which), every mutable global, and the
// pass's counters.
func (p *instancePool) reset(pi *pooledInstance) (pages int, how PoolReason) {
	if skipResets {
		return 0, "skipped"
	}
	if pi.lin != nil && pi.lin.image != nil {
		pages, how = resetWritten(pi.lin)
	}
	if how == "" {
		pages, how = copyChanged(pi.memory, pi.snap.memory), ResetCompare
	}
	p.resetGlobals(pi)
	return pages, how
}

// copyChanged sets memory to snap, copying back only the pages that
// differ: reading a page costs less than writing it, and a page left
// alone stays shared where it maps the snapshot's image.
func copyChanged(memory api.Memory, snap []byte) (pages int) {
	b, ok := memory.Read(0, uint32(len(snap)))
	if !ok {
		memory.Write(0, snap)
		return len(snap) / pageSize
	}
	for off := 0; off < len(snap); off += pageSize {
		end := min(off+pageSize, len(snap))
		if !bytes.Equal(b[off:end], snap[off:end]) {
			copy(b[off:end], snap[off:end])
			pages++
		}
	}
	return pages
}

// verify panics unless the instance's memory and globals are the
// snapshot's (a debugging check: it reads all of the memory).
func (p *instancePool) verify(pi *pooledInstance) {
	b, ok := pi.memory.Read(0, pi.memory.Size())
	if !ok || !bytes.Equal(b, pi.snap.memory) {
		panic("sandbox: a pooled instance's memory differs from its snapshot after a reset")
	}
	for i, g := range pi.globals {
		if g.Get() != pi.snap.globals[i] {
			panic(fmt.Sprintf("sandbox: global %d of a pooled instance differs from its snapshot after a reset", p.m.info.Globals[i]))
		}
	}
	if pi.fuel.Get() != 0 || pi.stack.Get() != 0 {
		panic("sandbox: a pooled instance's counters are not zero after a reset")
	}
}

func (p *instancePool) resetGlobals(pi *pooledInstance) {
	for i, g := range pi.globals {
		g.Set(pi.snap.globals[i])
	}
	pi.fuel.Set(0)
	pi.stack.Set(0)
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
