package sandbox_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// floods are guests that make the host work for them in a loop: fd_write
// of 1,000 iovecs over 32 MiB, random_get of 64 MiB, log of 32 MiB, and the
// cheapest host call there is (request_len), over and over. On main the
// host did that work unmetered: one fd_write flood answered 4.3 s after a
// 300 ms deadline.
var floods = []string{"fdflood", "randomflood", "logflood", "cheapcalls"}

// TestHostWorkIsMetered: the host's work for a guest is paid in fuel before
// it is done, so a flood runs out of its budget (deterministically: on main
// these ran until their deadline whatever the budget).
func TestHostWorkIsMetered(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	for _, name := range floods {
		t.Run(name, func(t *testing.T) {
			m := compile(t, sb, hostile(name))
			var fuel int64
			for i := 0; i < 2; i++ {
				rep, err := callFuel(t, m, 200_000_000, time.Minute)
				if !errors.Is(err, sandbox.ErrOutOfFuel) {
					t.Fatalf("got %v, want out of fuel", err)
				}
				if i == 1 && rep.FuelUsed != fuel {
					t.Errorf("fuel used %d, then %d", fuel, rep.FuelUsed)
				}
				fuel = rep.FuelUsed
			}
		})
	}
}

// TestHostWorkStopsAtTheDeadline: with fuel to spare, a flood still ends at
// its deadline. The bound here is loose for a noisy machine;
// BenchmarkDeadlineOvershoot measures how far past the deadline it ends.
func TestHostWorkStopsAtTheDeadline(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	for _, name := range floods {
		t.Run(name, func(t *testing.T) {
			m := compile(t, sb, hostile(name))
			start := time.Now()
			_, err := callFuel(t, m, sandbox.MaxFuel, 300*time.Millisecond)
			if !errors.Is(err, sandbox.ErrDeadline) {
				t.Fatalf("got %v, want the deadline", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("ended %v after the call began, deadline 300ms", d)
			}
		})
	}
}

// How far past a 300 ms deadline each flood ends (make bench):
//
//	go test -run '^$' -bench DeadlineOvershoot -benchtime 10x ./sandbox
func BenchmarkDeadlineOvershoot(b *testing.B) {
	sb := newSandbox(b, sandbox.Config{})
	for _, name := range append([]string{"loop"}, floods...) {
		m := compile(b, sb, hostile(name))
		b.Run(name, func(b *testing.B) {
			var worst, sum time.Duration
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				deadline, _ := ctx.Deadline()
				_, _ = m.Call(ctx, sandbox.Request{Body: []byte(`{}`), CallLimits: sandbox.CallLimits{Fuel: sandbox.MaxFuel}})
				over := time.Since(deadline)
				cancel()
				worst, sum = max(worst, over), sum+over
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "ms-worst")
			b.ReportMetric(float64(sum.Microseconds())/1000/float64(b.N), "ms-mean")
		})
	}
}

// stalled is a reader-less pipe: every Write waits until the test ends.
type stalled struct{ done chan struct{} }

func (s stalled) Write(p []byte) (int, error) {
	<-s.done
	return len(p), nil
}

// TestAStalledReaderNeverHoldsAGuest: with nobody reading the guests'
// output, a guest that writes lines still ends at its deadline (on main it
// waited on the writer for as long as the writer did), and the lines that
// did not fit are counted.
func TestAStalledReaderNeverHoldsAGuest(t *testing.T) {
	out := stalled{make(chan struct{})}
	defer close(out.done)
	var dropped atomic.Int64
	sb := newSandbox(t, sandbox.Config{Stdout: out, Stderr: out, DroppedLines: func(string) { dropped.Add(1) }})
	m := compile(t, sb, hostile("lines")) // 10,000 lines, then a loop
	done := make(chan error, 1)
	go func() {
		_, err := callFuel(t, m, sandbox.MaxFuel, 300*time.Millisecond)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, sandbox.ErrDeadline) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the guest waited for a reader that never came")
	}
	if dropped.Load() == 0 {
		t.Error("no dropped line was counted")
	}
}

// TestMemoryBudgetBoundsInstances: a call whose module's initial memory
// does not fit in what is left of the budget does not start; a guest's
// memory.grow past the budget returns -1; what calls took comes back.
func TestMemoryBudgetBoundsInstances(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{MemoryBudget: 4 << 20})
	fill := compile(t, sb, hostile("fill")) // 16 MiB of initial memory
	if _, err := callFuel(t, fill, 0, time.Minute); !errors.Is(err, sandbox.ErrMemoryBudget) {
		t.Fatalf("a 16 MiB module under a 4 MiB budget: %v", err)
	}
	grow := compile(t, sb, hostile("grow")) // grows until refused, then writes past its end
	rep, err := callFuel(t, grow, 0, time.Minute)
	var trap *sandbox.TrapError
	if !errors.As(err, &trap) || rep.MemoryBytes > 4<<20 || rep.MemoryBytes < 3<<20 {
		t.Fatalf("grow under a 4 MiB budget: %d bytes, %v", rep.MemoryBytes, err)
	}
	if n := sb.MemoryInUse(); n != 0 {
		t.Fatalf("%d bytes still counted after the calls", n)
	}
}

// TestStackIsBounded: the wasm stack of a call is bounded by an estimate
// of its frames (Config.MaxStackBytes), below wazero's own ceiling of
// 50 MB doubled: work recurses 15 deep (fib), fine at the default, a
// stack overflow under 512 bytes.
func TestStackIsBounded(t *testing.T) {
	for _, c := range []struct {
		limit uint32
		ok    bool
	}{{0, true}, {512, false}} {
		m := compile(t, newSandbox(t, sandbox.Config{MaxStackBytes: c.limit}), hostile("work"))
		_, err := callFuel(t, m, 0, time.Minute)
		var trap *sandbox.TrapError
		if c.ok && err != nil || !c.ok && (!errors.As(err, &trap) || trap.Message != "stack overflow") {
			t.Errorf("limit %d: %v", c.limit, err)
		}
	}
}
