package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// TestFirstTouchesStopAtTheDeadline: one memory.fill over 1 GiB of freshly
// grown memory, then memory.copy of 512 MiB in a loop (freshfill), and a
// byte written to each 4 KiB page of 2 GiB just grown (stride), are stopped
// within a bounded time of a 100 ms deadline, fresh and pooled: each chunk
// of a bulk operation looks at the clock, and a grow faults its pages in
// (in chunks, each after a look at the clock) before the guest touches
// them. On main the fill ran to its end, 3-4 s, each copy ran whole before
// the deadline was looked at again, and the strides took three units of
// fuel a page fault, the whole 2 GiB (0.8 s here) between two refills.
func TestFirstTouchesStopAtTheDeadline(t *testing.T) {
	for _, c := range []struct {
		name string
		pool int
	}{{"freshfill", 0}, {"freshfill", 1}, {"stride", 0}, {"stride", 1}} {
		pool := c.pool
		sb := newSandbox(t, sandbox.Config{PoolSize: pool, DefaultFuel: sandbox.MaxFuel, MemoryLimitPages: 40000})
		m := compile(t, sb, hostile(c.name))
		for round := 0; round < 2; round++ {
			_, err, took := callPastDeadline(m, 100*time.Millisecond)
			t.Logf("%s, pool %d, round %d: %v after %v", c.name, pool, round, err, took)
			if !errors.Is(err, sandbox.ErrDeadline) || took > 400*time.Millisecond {
				t.Errorf("%s, pool %d, round %d: %v after %v", c.name, pool, round, err, took)
			}
		}
	}
}

// TestJSONScanStopsAtTheDeadline: a guest that asks json_scan, again and
// again, where a string of 256 MiB of '<' ends (it does not: each scan
// reads all of it, about half a second) is stopped within a bounded time
// of its deadline, which falls while a scan is running (the memory.fill
// before it takes about 0.7 s): json_scan pays for a chunk at a time,
// each after a look at the clock. Paid for at once, a scan ran to its end,
// up to half a second past the deadline.
func TestJSONScanStopsAtTheDeadline(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{DefaultFuel: sandbox.MaxFuel, MemoryLimitPages: 8192})
	m := compile(t, sb, hostile("jsonscanspin"))
	for round := range 3 {
		rep, err, took := callPastDeadline(m, 1100*time.Millisecond)
		t.Logf("round %d: %v after %v, %d fuel", round, err, took, rep.FuelUsed)
		if !errors.Is(err, sandbox.ErrDeadline) || took > 1100*time.Millisecond+150*time.Millisecond {
			t.Errorf("round %d: %v after %v", round, err, took)
		}
	}
}

// callPastDeadline calls m with a deadline after d that only the host's
// look at the clock sees (lateTimer: the context's own timer fires 20 s
// later, the test's bound), and says how long the call took.
func callPastDeadline(m *sandbox.Module, d time.Duration) (sandbox.Reply, error, time.Duration) {
	return callPastDeadlineWith(m, d, []byte(`{}`))
}

// callPastDeadlineWith is callPastDeadline with the request body.
func callPastDeadlineWith(m *sandbox.Module, d time.Duration, body []byte) (sandbox.Reply, error, time.Duration) {
	stop, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctx := lateTimer{Context: stop, deadline: time.Now().Add(d)}
	start := time.Now()
	rep, err := m.Call(ctx, sandbox.Request{Body: body})
	return rep, err, time.Since(start)
}

// TestRequestFieldsStopsAtTheDeadline: a guest that asks request_fields,
// again and again, where the fields of a request of 96 MiB lie (each
// answer reads all of it, a few hundred milliseconds) is stopped within a
// bounded time of a deadline that falls while the first one reads: the
// import pays for a chunk of the request at a time, each after a look at
// the clock. Paid for at once, it read the whole request past the
// deadline.
func TestRequestFieldsStopsAtTheDeadline(t *testing.T) {
	body := append([]byte(`{"kind":"invoke","input":[`), bytes.Repeat([]byte(`1,`), 48<<20)...)
	body = append(body, `1]}`...)
	sb := newSandbox(t, sandbox.Config{DefaultFuel: sandbox.MaxFuel})
	m := compile(t, sb, hostile("requestfieldsspin"))
	for round := range 2 {
		_, err, took := callPastDeadlineWith(m, 20*time.Millisecond, body)
		t.Logf("round %d: %v after %v", round, err, took)
		if !errors.Is(err, sandbox.ErrDeadline) || took > 20*time.Millisecond+150*time.Millisecond {
			t.Errorf("round %d: %v after %v", round, err, took)
		}
	}
}
