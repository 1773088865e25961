package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
)

// Reply is what a guest answered, and the fuel the call burnt.
type Reply struct {
	Status   abi.Status
	Body     []byte
	FuelUsed int64
	// MemoryBytes is the instance's linear memory when the call ended
	// (linear memory only grows: its peak).
	MemoryBytes int64
	// Instance is what the call ran in: InstanceHit, InstanceMiss or
	// InstanceFresh. ResetSeconds is how long setting its pooled
	// instance back to the snapshot took after it, from the end of its
	// pack code (a grown memory's shrink included; 0: not reset, as a
	// fresh instance or one discarded is not).
	Instance     string
	ResetSeconds float64
	// Snapshot, for a recorded call (Request.Record) that ran in a pooled
	// instance, is the snapshot it was reset to: its id, and the tape of
	// the initialisation that made it (Module.WarmReplay rebuilds it).
	// Never change the tape.
	SnapshotID   string
	SnapshotTape *Tape
	// CPUSeconds is how long the call's pack code ran: from when its
	// instance was made or taken to its end, less the time it slept or
	// waited for an outbound request (its CPU time, as far as packd can
	// tell without a system call: a busy machine's other threads count).
	CPUSeconds float64
	// MemoryRefused: the memory budget or the call's memory account (its
	// tenant's share), not its limit, refused one of its memory.grow. What
	// the guest computed then depended on the other calls: a recording of
	// it cannot be replayed.
	MemoryRefused bool
}

// What a call ran in (Reply.Instance).
const (
	InstanceHit   = "hit"   // an idle instance of the module's pool
	InstanceMiss  = "miss"  // an instance made for it, then pooled
	InstanceFresh = "fresh" // an instance made for it alone, closed after
)

// Request is one call: the request message the guest reads, the whole
// environment it sees (KEY=VALUE), and its own limits (CallLimits).
// Output, when set, receives the call's whole lines (stream "stdout" or
// "stderr", each line ending in a newline) instead of Config.Stdout and
// Config.Stderr; it is called on the guest's goroutine and must not block.
// Fresh asks for a fresh instance even when the module's instances are
// pooled.
type Request struct {
	Body []byte
	// fields, when set, is where the fields of Body lie, as the host
	// found them when it made Body (InvokeRequest): request_fields answers
	// them, and pays for Body as if it read it, without reading it. Nil:
	// request_fields reads Body.
	fields *fieldSpans
	Env    []string
	CallLimits
	Output func(stream string, line []byte)
	Fresh  bool
	// Record, when set, gets every answer the host gives the guest (the
	// clocks, random bytes, poll wake-ups); Replay, when set, serves the
	// answers of a recorded call instead, in order, and a call that asks
	// for another stops with a *DivergenceError (tape.go).
	Record, Replay *Tape
	// Egress sends the call's outbound HTTP requests; nil refuses them
	// (the guest's http_request answers network-not-allowed).
	Egress Egress
	// Account is the memory account the call's instance memory is charged
	// to while it runs (nil: the budget alone).
	Account *MemoryAccount
	// FuelMeter, when set, is told of the fuel the call spends as it
	// spends it: each slice the guest takes (Config.FuelSlice) is added
	// before it runs, and what the call took but did not burn is taken
	// back when it ends, so that it ends up Reply.FuelUsed higher. A
	// tenant's running calls add up in one (a budget over time).
	FuelMeter *atomic.Int64
}

// CallLimits are a call's own settings that change what its guest
// computes. A record carries them as one value and a replay runs under
// them (host.Record), so a limit added here is recorded and replayed by
// construction.
type CallLimits struct {
	// Fuel is the call's fuel budget (0: Config.DefaultFuel).
	Fuel int64 `json:"fuel"`
	// MemoryLimit bounds the call's linear memory, in bytes, below
	// Config.MemoryLimitPages (0: that limit alone): its memory.grow past
	// it returns -1, and an instance already over it does not run the call
	// (ErrMemoryLimit).
	MemoryLimit int64 `json:"memoryLimit,omitempty"`
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
		// Below zero, the counter is what the guest's last segments took
		// after its last look at it (instrument: take): burnt too.
		rep.FuelUsed -= int64(fuel.Get())
	}
	if fuel != nil && rep.FuelUsed > budget {
		// The budget ran out in those segments: as if a look had seen it.
		*rep = Reply{FuelUsed: budget, Instance: rep.Instance, SnapshotID: rep.SnapshotID, SnapshotTape: rep.SnapshotTape}
		if err == nil {
			err = ErrOutOfFuel
		}
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
		*rep = Reply{FuelUsed: min(max(used, 0), budget), Instance: rep.Instance, SnapshotID: rep.SnapshotID, SnapshotTape: rep.SnapshotTape}
		err = &ABIError{Func: instrument.GlobalExport, Reason: fmt.Sprintf("fuel used %d is outside the budget of %d", used, budget)}
	}
	if st.meter != nil {
		st.meter.Add(rep.FuelUsed - (budget - st.fuelLeft)) // what it took and did not burn
	}
	st.ended = monotonic()
	rep.CPUSeconds = max(st.ended-st.clock-st.waited, 0).Seconds()
	rep.MemoryRefused = st.memoryRefused
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
		fields:    req.fields,
		maxResp:   s.cfg.MaxResponseBytes,
		env:       req.Env,
		egress:    req.Egress,
		stdout:    lineWriter{sink: sinkFor(req.Output, "stdout", s.stdout), maxLine: s.cfg.MaxLineBytes, budget: s.cfg.MaxOutputBytes},
		stderr:    lineWriter{sink: sinkFor(req.Output, "stderr", s.stderr), maxLine: s.cfg.MaxLineBytes, budget: s.cfg.MaxOutputBytes},
		fuelLeft:  budget,
		fuelSlice: s.cfg.FuelSlice,
		budget:    budget,
		record:    req.Record,
		replay:    req.Replay,
		meter:     req.FuelMeter,
		clock:     monotonic(),
	}
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
	rep.Instance = InstanceFresh
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
	mem := &callMemory{budget: s.mem, maps: s.maps, account: req.Account, state: st}
	defer mem.detach()
	if !req.Account.take(m.minBytes) {
		return rep, ErrMemoryShare
	}
	mem.held = m.minBytes
	if !s.mem.take(m.minBytes) {
		return rep, ErrMemoryBudget
	}
	mem.prepaid = m.minBytes
	defer mem.release()
	mem.limit = req.MemoryLimit
	ctx = experimental.WithMemoryAllocator(ctx, mem.allocator())
	ctx = context.WithValue(ctx, stateKey{}, st)
	st.bind(ctx)
	inst, err = s.instantiate(ctx, m, true)
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

// instantiate makes an instance of m, its data segments written when
// withData (an instance about to be set to the snapshot needs none); a
// panic in wazero becomes an error.
func (s *Sandbox) instantiate(ctx context.Context, m *Module, withData bool) (inst api.Module, err error) {
	defer func() {
		if p := recover(); p != nil {
			inst, err = nil, fmt.Errorf("wazero panicked instantiating the module: %v", p)
		}
	}()
	m.instMu.RLock()
	inst, err = s.rt.InstantiateModule(ctx, m.compiled, s.modCfg)
	taken := m.dataTaken
	m.instMu.RUnlock()
	if err != nil || !taken || !withData {
		return inst, err
	}
	for i, r := range m.data {
		if !inst.Memory().Write(r.off, r.init) {
			_ = inst.Close(context.Background())
			return nil, fmt.Errorf("data[%d]: out of bounds memory access", i)
		}
	}
	return inst, nil
}

// takeData takes m's data segments out of what wazero instantiates, once
// its pool's snapshot maps an image: then the only instances that need
// them written are those that run _initialize or serve a call fresh,
// which get them from instantiate. A pool miss spent 70% of its time
// (3.7 of 5.3 ms for a Go module) writing 1.5 MiB that the revert to the
// image then threw away.
func (m *Module) takeData() {
	if snap := m.pool.snap.Load(); snap == nil || snap.image == nil {
		return
	}
	m.instMu.Lock()
	defer m.instMu.Unlock()
	if !m.dataTaken {
		m.data, m.dataTaken = removeData(m.compiled)
	}
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
