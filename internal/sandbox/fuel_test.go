package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
)

func callFuel(t *testing.T, m *sandbox.Module, budget int64, timeout time.Duration) (sandbox.Reply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return m.Call(ctx, sandbox.Request{Body: []byte(`{}`), CallLimits: sandbox.CallLimits{Fuel: budget}})
}

func TestSameCallBurnsTheSameFuel(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	m := compile(t, sb, hostile("work"))
	var first int64
	for i := 0; i < 3; i++ {
		rep, err := callFuel(t, m, 0, 30*time.Second)
		if err != nil || string(rep.Body) != `{"ok":true}` {
			t.Fatalf("%s %v", rep.Body, err)
		}
		if i == 0 {
			first = rep.FuelUsed
			// 100000 iterations of a 12-instruction loop at the least,
			// and two pages of memory.grow.
			if min := int64(1_200_000 + 2*instrument.GrowPageCost); first < min || first > min+800_000 {
				t.Fatalf("fuel used %d is not what the workload costs", first)
			}
		} else if rep.FuelUsed != first {
			t.Fatalf("call %d burnt %d, the first %d", i+1, rep.FuelUsed, first)
		}
	}
	// A fresh sandbox (a fresh compile) burns the same.
	rep, err := callFuel(t, compile(t, newSandbox(t, sandbox.Config{}), hostile("work")), 0, 30*time.Second)
	if err != nil || rep.FuelUsed != first {
		t.Fatalf("fresh sandbox: %d %v, want %d", rep.FuelUsed, err, first)
	}
}

func TestFuelStopsRunawayGuests(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	cases := []struct {
		name   string
		budget int64
	}{
		{"loop", 5_000_000}, // an infinite loop
		{"recurse", 10_000}, // a deep recursion without a loop: fuel, not the stack, stops it
		{"fill", 1_000_000}, // memory.fill of the whole memory, charged before it runs
		{"work", 100_000},   // a finite workload over its budget
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			rep, err := callFuel(t, compile(t, sb, hostile(c.name)), c.budget, time.Minute)
			if !errors.Is(err, sandbox.ErrOutOfFuel) {
				t.Fatalf("got %v", err)
			}
			if rep.FuelUsed != c.budget {
				t.Errorf("used %d of a %d budget", rep.FuelUsed, c.budget)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

func TestDeadlineStopsAGuestWithFuelLeft(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	rep, err := callFuel(t, compile(t, sb, hostile("loop")), sandbox.MaxFuel, 300*time.Millisecond)
	if !errors.Is(err, sandbox.ErrDeadline) {
		t.Fatalf("got %v", err)
	}
	if rep.FuelUsed <= 0 || rep.FuelUsed >= sandbox.MaxFuel {
		t.Fatalf("fuel used %d", rep.FuelUsed)
	}
}

func TestFuelBudgetOverTheLimitIsRefused(t *testing.T) {
	if _, err := sandbox.New(context.Background(), sandbox.Config{DefaultFuel: sandbox.MaxFuel + 1}); err == nil {
		t.Fatal("a budget over MaxFuel was accepted")
	}
}

// TestFuelChargesTheCaseThatRuns: in Go's shape of code (one loop around a
// br_table into the end of one block per case), a call is charged for the
// case it runs at each iteration, not for the loop's whole body: 1,000
// iterations of a small case beside a big one that never runs burn a few
// instructions each. On main each iteration paid for the 1,000 nops of the
// big case too (over 1,000,000 units; a Go guest burnt 10-15x what it ran).
func TestFuelChargesTheCaseThatRuns(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{}), hostile("dispatch"))
	rep, err := callFuel(t, m, 0, 30*time.Second)
	if err != nil || string(rep.Body) != `{}` {
		t.Fatalf("%s %v", rep.Body, err)
	}
	if rep.FuelUsed > 30_000 {
		t.Fatalf("1,000 iterations of a small case burnt %d units of fuel, want under 30,000", rep.FuelUsed)
	}
	again, err := callFuel(t, m, 0, 30*time.Second)
	if err != nil || again.FuelUsed != rep.FuelUsed {
		t.Fatalf("the same call burnt %d then %d (%v)", rep.FuelUsed, again.FuelUsed, err)
	}
}

// TestABudgetSpentAfterTheLastLookIsOutOfFuel: a call whose last code (an
// if's arm, charged as it is entered, with no look at the counter before
// the call returns) takes it past its budget ends out of fuel, as if a
// look had seen it, and reports its whole budget as used: the answer it
// wrote before is not returned.
func TestABudgetSpentAfterTheLastLookIsOutOfFuel(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{}), hostile("overrun"))
	if rep, err := callFuel(t, m, 0, 30*time.Second); err != nil || rep.FuelUsed < 2000 {
		t.Fatalf("with the default budget: %s, %d units, %v; want {} and over 2,000 units", rep.Body, rep.FuelUsed, err)
	}
	rep, err := callFuel(t, m, 1000, 30*time.Second)
	if !errors.Is(err, sandbox.ErrOutOfFuel) || rep.FuelUsed != 1000 || rep.Body != nil {
		t.Fatalf("under a budget of 1,000: %q, %d units, %v; want out of fuel, 1,000 units and no answer", rep.Body, rep.FuelUsed, err)
	}
	// Handed out in slices of 100, the budget is not all handed out when
	// the arm takes the counter past it: out of fuel too (it was taken for
	// a broken counter, "outside the budget").
	sliced := compile(t, newSandbox(t, sandbox.Config{FuelSlice: 100}), hostile("overrun"))
	rep, err = callFuel(t, sliced, 1000, 30*time.Second)
	if !errors.Is(err, sandbox.ErrOutOfFuel) || rep.FuelUsed != 1000 || rep.Body != nil {
		t.Fatalf("under a budget of 1,000 in slices of 100: %q, %d units, %v; want out of fuel, 1,000 units and no answer", rep.Body, rep.FuelUsed, err)
	}
}
