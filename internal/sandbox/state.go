package sandbox

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// callState is everything a host function may touch during one call. It
// travels in the context, so host modules are instantiated once per runtime
// and still never see another call's data.
type callState struct {
	request  []byte
	fields   *fieldSpans // Request.fields
	response []byte
	wrote    bool
	maxResp  int
	env      []string // KEY=VALUE, exactly what the caller allows
	// Outbound HTTP: who sends the call's requests (nil: none may be
	// sent), and the last request's answer and body until the guest reads
	// them.
	egress     Egress
	httpAnswer []byte
	httpBody   []byte
	stdout     lineWriter
	stderr     lineWriter
	// Fuel: fuelLeft is the part of the budget not yet handed to the guest,
	// in slices of fuelSlice, by the refill import.
	fuelLeft, fuelSlice int64
	meter               *atomic.Int64 // Request.FuelMeter
	// waited is the time the call slept or waited for an outbound
	// request since its clock started (Reply.CPUSeconds).
	waited time.Duration
	// fuel is the fuel counter of fuelOf, once looked up.
	fuel   api.MutableGlobal
	fuelOf api.Module
	// deadline is the call's deadline (when hasDeadline), read once from
	// its context: the host compares it with the clock itself, since the
	// context's timer fires late when every core is busy in guest code.
	deadline    time.Time
	hasDeadline bool
	// Readings of monotonic: clock is when the call's pack code was set
	// to run (its instance made or taken), deadlineAt its deadline, ranAt
	// when the guest last let other goroutines run (yield), ended when
	// its pack code returned (settle).
	clock, deadlineAt, ranAt, ended time.Duration
	// unlooked is the fuel host work has charged since the clock was
	// last read (charge).
	unlooked int64
	// budget is the call's fuel budget; record and replay its tapes
	// (Request.Record, Request.Replay).
	budget         int64
	record, replay *Tape
	// memoryRefused: the memory budget or the call's account refused one
	// of its memory.grow (Reply.MemoryRefused).
	memoryRefused bool
}

// processStart is what monotonic measures from.
var processStart = time.Now()

// monotonic reads the monotonic clock, as the time since processStart:
// one read of the clock, where time.Now makes two (the wall clock too).
// A pooled call reads it three times: at its start, its end and its
// reset's end. A guest's monotonic clock (WASI clock 1) is this one.
func monotonic() time.Duration { return time.Since(processStart) }

// bind notes the deadline of the context the call runs under, from the
// call's clock (started by initState).
func (st *callState) bind(ctx context.Context) {
	st.deadline, st.hasDeadline = ctx.Deadline()
	st.ranAt, st.unlooked = st.clock, 0
	switch {
	case !st.hasDeadline:
	case st.deadline != st.deadline.Round(0):
		// It carries a monotonic reading (Round(0) strips it), as every
		// deadline made from time.Now does: no need to read the clock.
		st.deadlineAt = st.deadline.Sub(processStart)
	default:
		st.deadlineAt = time.Until(st.deadline) + monotonic()
	}
}

// tick reads the clock and reports whether the call's deadline has
// passed; if it has not, it lets the goroutines waiting for a core run
// once the guest has run for yieldEvery since it last did.
func (st *callState) tick() (late bool) {
	t := monotonic()
	if st.hasDeadline && t >= st.deadlineAt {
		return true
	}
	if t-st.ranAt >= yieldEvery {
		runtime.Gosched()
		st.ranAt = monotonic()
	}
	return false
}

// yieldEvery is how long a guest runs before the fuel refill lets the
// other goroutines waiting for a core run.
const yieldEvery = time.Millisecond

// Why tick yields: Go preempts a goroutine only after 10 ms, and code in
// wasm only where it calls the host, so with every core in guest code a
// call whose sleep ended (or whose deadline came) waited up to 10 ms for
// each guest ahead of it: answers came tens of milliseconds past their
// deadline.

type stateKey struct{}

// stateCtx is a call's context carrying its state without an allocation:
// a pooled instance keeps one and sets it for each of its calls (they
// never overlap).
type stateCtx struct {
	context.Context
	st *callState
}

func (c *stateCtx) Value(key any) any {
	if key == (stateKey{}) {
		return c.st
	}
	return c.Context.Value(key)
}

func stateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(stateKey{}).(*callState)
	if st == nil {
		// A host function called outside a call (cannot happen through this
		// package's API): stop the guest rather than crash the host.
		panic(&ABIError{Func: "host", Reason: "called outside a call"})
	}
	return st
}

// read returns guest memory [ptr, ptr+n) or stops the guest with an ABIError.
func read(mod api.Module, fn string, ptr, n uint32) []byte {
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		panic(&ABIError{Func: fn, Reason: oob(ptr, n, mod.Memory().Size())})
	}
	return b
}

func oob(ptr, n, size uint32) string {
	return fmt.Sprintf("pointer %d with length %d is outside guest memory of %d bytes", ptr, n, size)
}
