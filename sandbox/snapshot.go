package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/sandbox/internal/instrument"
)

// fresh instantiates the module for a call whose fuel budget is budget,
// under its deadline (ctx's). The first instance runs _initialize and
// becomes the snapshot: that is the module's load-time work, under the
// load-time limits (within the call's deadline); its memory then maps the
// snapshot's image, and it serves the call. The others are set to it,
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
	mem.state = st
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
		case image && (pi.lin == nil || !pi.lin.adopt(snap.image)):
			// serve from an instance that maps the image instead
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
