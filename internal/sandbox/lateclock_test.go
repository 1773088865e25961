package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// lateTimer is a context whose deadline comes at deadline but whose timer
// never fires, as under load when every core is busy in guest code: Err
// stays nil and Done open. It is a parent's cancel (stop) only.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

// TestTheClockStopsAGuestWhoseTimerIsLate: a guest spinning in wasm or
// sleeping in poll_oneoff is stopped at its deadline by the clock, with
// ErrDeadline, in fresh and pooled instances, though its context's timer
// has not fired (on main the spinner ran until its fuel was gone and the
// sleeper slept its hour, ended here by the test's own stop). A deadline
// of the wall clock alone (no monotonic reading: parsed, or made with
// time.Unix) stops it as one made from time.Now does.
func TestTheClockStopsAGuestWhoseTimerIsLate(t *testing.T) {
	for _, pool := range []int{0, 1} {
		sb := newSandbox(t, sandbox.Config{PoolSize: pool, DefaultFuel: sandbox.MaxFuel})
		for _, name := range []string{"loop", "sleep", "loop on the wall clock"} {
			m := compile(t, sb, hostile(strings.Fields(name)[0]))
			stop, cancel := context.WithTimeout(context.Background(), 20*time.Second) // the test's own bound
			deadline := time.Now().Add(100 * time.Millisecond)
			if strings.HasSuffix(name, "wall clock") {
				deadline = deadline.Round(0)
			}
			ctx := lateTimer{Context: stop, deadline: deadline}
			start := time.Now()
			_, err := m.Call(ctx, sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{}}`)})
			took := time.Since(start)
			cancel()
			// (Stopped at its deadline, not before it: 100 ms after
			// deadline was read, a little less after start.)
			if !errors.Is(err, sandbox.ErrDeadline) || took > 5*time.Second || took < 50*time.Millisecond {
				t.Errorf("pool %d, %s: %v after %v", pool, name, err, took)
			}
		}
	}
}
