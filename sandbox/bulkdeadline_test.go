package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kindgi/packd/sandbox"
)

// TestABulkOperationStopsAtTheDeadline: one memory.fill over 1 GiB of
// freshly grown memory (every page a first touch), then memory.copy of
// 512 MiB in a loop, is stopped within a bounded time of a 100 ms
// deadline, fresh and pooled: each chunk of a bulk operation looks at the
// clock. On main the fill ran to its end, seconds on a busy machine, and
// each copy ran whole before the deadline was looked at again.
func TestABulkOperationStopsAtTheDeadline(t *testing.T) {
	for _, pool := range []int{0, 1} {
		sb := newSandbox(t, sandbox.Config{PoolSize: pool, DefaultFuel: sandbox.MaxFuel, MemoryLimitPages: 20000})
		m := compile(t, sb, hostile("freshfill"))
		for round := 0; round < 2; round++ {
			stop, cancel := context.WithTimeout(context.Background(), 20*time.Second) // the test's own bound
			ctx := lateTimer{Context: stop, deadline: time.Now().Add(100 * time.Millisecond)}
			start := time.Now()
			_, err := m.Call(ctx, sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"hostile.freshfill"},"input":{},"ctx":{}}`)})
			took := time.Since(start)
			cancel()
			if !errors.Is(err, sandbox.ErrDeadline) || took > 600*time.Millisecond {
				t.Errorf("pool %d, round %d: %v after %v", pool, round, err, took)
			}
		}
	}
}
