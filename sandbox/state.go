package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// callState is everything a host function may touch during one call. It
// travels in the context, so host modules are instantiated once per runtime
// and still never see another call's data.
type callState struct {
	request  []byte
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
	// fuel is the fuel counter of fuelOf, once looked up.
	fuel   api.MutableGlobal
	fuelOf api.Module
	// deadline is the call's deadline (when hasDeadline), read once from
	// its context: the host compares it with the clock itself, since the
	// context's timer fires late when every core is busy in guest code.
	deadline    time.Time
	hasDeadline bool
}

// bind notes the deadline of the context the call runs under.
func (st *callState) bind(ctx context.Context) {
	st.deadline, st.hasDeadline = ctx.Deadline()
}

// pastDeadline reports whether the call's deadline has passed by the
// clock, whether or not its context's timer has fired yet.
func (st *callState) pastDeadline() bool {
	return st.hasDeadline && !time.Now().Before(st.deadline)
}

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
