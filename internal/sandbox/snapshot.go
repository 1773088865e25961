package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
)

// fresh instantiates the module for a call whose fuel budget is budget,
// under its deadline (ctx's). When the pool has no snapshot (Warm took
// none, or it expired), the first instance runs _initialize and becomes
// the snapshot: that is the module's load-time work, under the load-time
// limits (within the call's deadline); its memory then maps the
// snapshot's image, and it serves the call. The others are set to it,
// and what their instantiation runs (a start function) is the call's:
// on its fuel, at most the load-time fuel.
func (p *instancePool) fresh(ctx context.Context, env []string, budget int64) (*pooledInstance, error) {
	snapped := p.snap.Load()
	if snapped == nil {
		pi, took, err := p.takeFirst(ctx, env, nil)
		switch {
		case errors.Is(err, errNotAdopted):
			return p.fresh(ctx, env, budget) // serve from an instance that maps the image instead
		case took || err != nil:
			return pi, err
		}
		snapped = p.snap.Load() // taken while this call waited
	}
	pi, _, done, err := p.instantiate(ctx, env, min(p.m.sb.cfg.LoadFuel, budget), snapped.image, false, nil, nil)
	defer done()
	if err != nil {
		return nil, err
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
	if delta := (uint32(len(pi.snap.memory)) - pi.memory.Size()) / wasmPage; delta > 0 {
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

// takeFirst takes the pool's snapshot unless one was taken while it
// waited for snapLock (took false, no instance); the instance that took
// it is the caller's.
func (p *instancePool) takeFirst(ctx context.Context, env []string, replay *Tape) (pi *pooledInstance, took bool, err error) {
	select {
	case p.snapLock <- struct{}{}:
	case <-ctx.Done():
		return nil, false, fmt.Errorf("instantiating module: waiting for its snapshot: %w", classify(ctx, ctx.Err()))
	}
	defer func() { <-p.snapLock }()
	if p.snap.Load() != nil {
		return nil, false, nil
	}
	pi, err = p.takeNew(ctx, env, replay)
	return pi, true, err
}

// errNotAdopted: a new snapshot was taken, but the instance that took it
// could not map its image; an instance made from the snapshot serves.
var errNotAdopted = errors.New("the instance that took the snapshot cannot map its image")

// takeNew makes an instance, runs _initialize in it and makes what it
// left the pool's snapshot, under the load-time limits (within ctx's
// deadline); the instance then maps the snapshot's image. snapLock held.
// What the host answered the start function and _initialize goes on the
// snapshot's tape, or, with replay, comes from that tape: the same module
// bytes, environment and tape give the same snapshot (Module.WarmReplay).
func (p *instancePool) takeNew(ctx context.Context, env []string, replay *Tape) (*pooledInstance, error) {
	tape, record := replay, (*Tape)(nil)
	if tape == nil && p.m.sb.cfg.SnapshotTapeBytes > 0 {
		record = &Tape{Max: p.m.sb.cfg.SnapshotTapeBytes}
		tape = record
	}
	pi, lctx, done, err := p.instantiate(ctx, env, p.m.sb.cfg.LoadFuel, nil, true, record, replay)
	defer done()
	if err != nil {
		return nil, err
	}
	snap, err := p.takeSnapshot(lctx, pi, env, tape)
	if err != nil {
		pi.close()
		return nil, err
	}
	pi.snap = snap
	if snap.image != nil && (pi.lin == nil || !pi.lin.adopt(snap.image)) {
		pi.close()
		return nil, errNotAdopted
	}
	return pi, nil
}

// instantiate makes an instance of the module (its memory mapping image
// when there is one) on fuel, under the load timeout within ctx's
// deadline: that context, until done is called.
func (p *instancePool) instantiate(ctx context.Context, env []string, fuel int64, image *memImage, withData bool, record, replay *Tape) (*pooledInstance, context.Context, func(), error) {
	m, s := p.m, p.m.sb
	mem := &callMemory{budget: s.mem, maps: s.maps, image: image}
	if !mem.take(m.minBytes) {
		return nil, nil, func() {}, ErrMemoryBudget
	}
	mem.prepaid = m.minBytes
	lctx, cancel := context.WithTimeout(ctx, s.cfg.LoadTimeout)
	st := s.newState(Request{Env: env, Record: record, Replay: replay}, fuel)
	mem.state = st
	lctx = context.WithValue(lctx, stateKey{}, st)
	st.bind(lctx)
	lctx = experimental.WithMemoryAllocator(lctx, mem.allocator())
	inst, err := s.instantiate(lctx, m, withData)
	mem.release()
	if err != nil {
		return nil, nil, cancel, fmt.Errorf("instantiating module: %w", classify(lctx, err))
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
		return nil, nil, cancel, errors.New("instantiating module: no fuel counter")
	}
	pi.stack, ok = inst.ExportedGlobal(instrument.StackExport).(api.MutableGlobal)
	if !ok || pi.memory == nil {
		pi.close()
		return nil, nil, cancel, errors.New("instantiating module: no stack counter or memory")
	}
	for _, g := range m.info.Globals {
		mg, ok := inst.ExportedGlobal(instrument.GlobalPrefix + strconv.FormatUint(uint64(g), 10)).(api.MutableGlobal)
		if !ok {
			pi.close()
			return nil, nil, cancel, errors.New("instantiating module: a mutable global is not exported")
		}
		pi.globals = append(pi.globals, mg)
	}
	return pi, lctx, cancel, nil
}

// Warm takes a pooled module's snapshot now, for calls that will see env,
// under the load-time limits, and keeps the instance that took it for the
// first call: the module's load-time work is done at load, and no call
// waits for it (the first call to a Go module at boot spent 12-25 ms
// there, 100 ms beside three others, most of it past a 20 ms deadline,
// make deadlineload). A module that is not pooled has nothing to warm.
// Then its code is mapped from its file in the cache, so that only what
// calls run of it stays resident (sharedcode_linux.go).
func (m *Module) Warm(ctx context.Context, env []string) error {
	defer func() { _ = m.shareCode() }() // where it cannot, the code stays as it is
	if m.pool == nil {
		return nil
	}
	pi, took, err := m.pool.takeFirst(ctx, env, nil)
	switch {
	case errors.Is(err, errNotAdopted):
		return nil // the snapshot is taken: calls make their instances of it
	case err != nil:
		return err
	case took:
		m.pool.put(pi, time.Now())
	}
	m.takeData()
	return nil
}

// Snapshot is the id of the pooled module's snapshot now (the SHA-256 of
// its memory and globals) and the tape of what the host answered the
// initialisation that made it; ok is false when it has none (not pooled,
// or not taken yet).
func (m *Module) Snapshot() (id string, tape *Tape, ok bool) {
	if m.pool == nil {
		return "", nil, false
	}
	snap := m.pool.snap.Load()
	if snap == nil {
		return "", nil, false
	}
	return snap.ident(), snap.tape, true
}

// WarmReplay takes the pooled module's snapshot, for calls that will see
// env, with its initialisation served from tape (another snapshot's, see
// Snapshot), unless it has one already: the same module bytes,
// environment and tape give the same snapshot, with the same id. A module
// whose initialisation asks for other answers fails with a
// *DivergenceError.
func (m *Module) WarmReplay(ctx context.Context, env []string, tape *Tape) error {
	if m.pool == nil {
		return errors.New("sandbox: a snapshot is a pooled module's (Config.PoolSize)")
	}
	tape.Rewind()
	pi, took, err := m.pool.takeFirst(ctx, env, tape)
	switch {
	case errors.Is(err, errNotAdopted):
		return nil
	case err != nil:
		return err
	case took:
		m.pool.put(pi, time.Now())
	}
	return nil
}

// refreshAhead is how long before it would expire a snapshot is taken anew
// by the pool's janitor, so that no call waits for it.
const refreshAhead = time.Minute

// refresh takes the snapshot anew once it is within refreshAhead of
// snapshotMaxAge, in the background, for the environment it was taken
// with, under the load-time limits; instances of the old one are closed
// as they come back. When it cannot (the budget is spent, _initialize
// failed), the old one serves on until it expires, and the next call
// takes one.
func (p *instancePool) refresh(now time.Time) {
	old := p.snap.Load()
	if old == nil || now.Sub(old.taken) < snapshotMaxAge-refreshAhead {
		return
	}
	select {
	case p.snapLock <- struct{}{}:
	default:
		return // being taken
	}
	defer func() { <-p.snapLock }()
	if p.snap.Load() != old {
		return
	}
	pi, err := p.takeNew(context.Background(), old.env, nil)
	if err != nil && !errors.Is(err, errNotAdopted) {
		return
	}
	p.retire(old)
	if pi != nil {
		p.put(pi, now)
	}
}

// expire drops a snapshot taken before cutoff: the next instance takes a
// new one, instances of the old one are closed when they come back, and
// the old image is closed (mappings of it keep it alive).
func (p *instancePool) expire(cutoff time.Time) {
	old := p.snap.Load()
	if old == nil || !old.taken.Before(cutoff) || !p.snap.CompareAndSwap(old, nil) {
		return
	}
	p.retire(old)
}

// retire closes a snapshot that is no longer the pool's: its image
// (mappings of it keep it alive), and every idle instance, all of it.
func (p *instancePool) retire(old *snapshot) {
	old.image.close()
	p.trim(time.Now().Add(time.Hour))
}

// takeSnapshot runs _initialize in pi and keeps what it left (snapLock
// held: one snapshot is taken at a time).
func (p *instancePool) takeSnapshot(ctx context.Context, pi *pooledInstance, env []string, tape *Tape) (*snapshot, error) {
	if p.m.hasInit {
		if _, err := pi.inst.ExportedFunction(abi.ExportInitialize).Call(ctx); err != nil {
			return nil, fmt.Errorf("initializing module: %w", classify(ctx, err))
		}
	}
	b, _ := pi.memory.Read(0, pi.memory.Size())
	snap := &snapshot{env: slices.Clone(env), taken: time.Now(), tape: tape}
	for _, g := range pi.globals {
		snap.globals = append(snap.globals, g.Get())
	}
	if ownMemory() {
		snap.image = newMemImage(b)
	}
	if snap.image != nil {
		snap.memory = snap.image.data // the memfd's pages, mapped read-only: no copy of its own
	} else {
		snap.memory = append([]byte(nil), b...)
	}
	p.snap.Store(snap)
	return snap, nil
}

// ident is the snapshot's id, the SHA-256 of its memory and globals,
// worked out when first asked: only records and replays ask, and it took
// 3.5 ms of every Go module's load (5.5 MiB of memory).
func (s *snapshot) ident() string {
	s.idOnce.Do(func() {
		h := sha256.New()
		h.Write(s.memory)
		for _, g := range s.globals {
			h.Write(binary.LittleEndian.AppendUint64(nil, g))
		}
		s.id = "sha256:" + hex.EncodeToString(h.Sum(nil))
	})
	return s.id
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
