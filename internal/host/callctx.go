package host

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A call's deadline as a context that arms no timer until it must.
//
// context.WithTimeout costs a call a timer, a cancel context registered
// with its parent (whose children map and done channel a request's
// context makes for it) and their undoing: five allocations more than
// this (BenchmarkInvokeServed) and, in a CPU profile of /v1/invoke under
// load, about 3.7 µs a call, a sixth of what packd's handler spent on an
// echo call. Nearly no call needs any of it. What must stop at the
// deadline reads it from Deadline() and the clock, as it must anyway for
// a timer that fires late when every core is busy: the sandbox's fuel
// refills and costly host calls (callState.tick), the host between its
// steps (Call.late), ojson's decoder every few thousand values. Err()
// says when the caller has gone (the parent's Err), without a look at
// the clock at every host call (a previous look at it there was 8% of a
// pooled Go echo). So withDeadline's context makes the real one
// (context.WithDeadline, the one source of truth from then on) only when
// something needs it: a Done channel to wait on, a child (which finds it
// by Value), the parent's error to keep. Its release stops the timer of
// one that was armed.

// deadlineCtx is a parent's context with a deadline (the earlier of its
// own and the parent's) that is not armed until it must be.
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time
	mu       sync.Mutex
	armed    atomic.Pointer[armedDeadline] // once set, it answers Done and Err
}

type armedDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// released is what a context released before it was armed answers with:
// cancelled, as a context.WithTimeout is after its cancel.
var released = func() *armedDeadline {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return &armedDeadline{ctx, cancel}
}()

// withDeadline is context.WithTimeout(parent, d) without a timer until
// one is needed. The release func ends it as cancel does WithTimeout's:
// call it when the work is done.
func withDeadline(parent context.Context, d time.Duration) (context.Context, func()) {
	c := &deadlineCtx{parent: parent, deadline: time.Now().Add(d)}
	if pd, ok := parent.Deadline(); ok && pd.Before(c.deadline) {
		c.deadline = pd
	}
	return c, c.release
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Value is the parent's, but for the armed context's own: the context
// package finds the cancel context under a context by its Value, so a
// child of this one (context.WithCancel, context.AfterFunc), even through
// a context that wraps it (the sandbox's), arms it and is a child of the
// armed one, not a goroutine that waits for it.
func (c *deadlineCtx) Value(key any) any {
	if a := c.armed.Load(); a != nil && a != released {
		return a.ctx.Value(key)
	}
	return c.parent.Value(key)
}

// Err is the armed context's; before it is armed, nil while the parent's
// is (the deadline is the clock's to say, as for a timer not yet fired),
// and the parent's error arms it, which keeps it.
func (c *deadlineCtx) Err() error {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Err()
	}
	if c.parent.Err() == nil {
		return nil
	}
	return c.arm().Err()
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.arm().Done() }

func (c *deadlineCtx) String() string { return "host.withDeadline(" + c.deadline.String() + ")" }

// arm makes the real context once: context.WithDeadline of the parent,
// done at once when the deadline has passed or the parent is done.
func (c *deadlineCtx) arm() context.Context {
	if a := c.armed.Load(); a != nil {
		return a.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.armed.Load(); a != nil {
		return a.ctx
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	c.armed.Store(&armedDeadline{ctx, cancel})
	return ctx
}

// release ends the context: cancelled from now on (an error it has seen
// already it keeps), its timer stopped if it had one.
func (c *deadlineCtx) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.armed.Load(); a != nil {
		a.cancel()
		return
	}
	c.armed.Store(released)
}
