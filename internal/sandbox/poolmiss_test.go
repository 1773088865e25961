package sandbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// TestAPoolMissRunsOnTheCallsFuel: a pool's second instance, made for a
// call while the first serves another, runs the module's start function
// (about 10^7 units here) on the calling tool's fuel, not on the load
// budget: a call with 100,000 units runs out of fuel (on main it ran the
// start function under the load budget, 2×10^9, and answered); with
// enough fuel it answers. The first instance, which takes the snapshot,
// is the module's load-time work.
func TestAPoolMissRunsOnTheCallsFuel(t *testing.T) {
	missed := make(chan struct{}, 8)
	sb := newSandbox(t, sandbox.Config{PoolSize: 2, PoolEvents: func(ev sandbox.PoolEvent) {
		if ev.Kind == sandbox.PoolMiss {
			missed <- struct{}{}
		}
	}})
	m := compile(t, sb, hostile("startburn"))
	body := []byte(`{"kind":"invoke","tool":{"id":"hostile.startburn"},"input":{},"ctx":{}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	var firstErr error
	go func() { // takes the snapshot, then sleeps 300 ms in its call
		defer wg.Done()
		_, firstErr = m.Call(ctx, sandbox.Request{Body: body})
	}()
	<-missed
	time.Sleep(100 * time.Millisecond) // the snapshot is taken; the first call sleeps
	_, err := m.Call(ctx, sandbox.Request{Body: body, CallLimits: sandbox.CallLimits{Fuel: 100_000}})
	if !errors.Is(err, sandbox.ErrOutOfFuel) {
		t.Errorf("a miss with 100,000 units: %v", err)
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("the first call: %v", firstErr)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _, firstErr = m.Call(ctx, sandbox.Request{Body: body}) }()
	time.Sleep(100 * time.Millisecond)
	if _, err := m.Call(ctx, sandbox.Request{Body: body, CallLimits: sandbox.CallLimits{Fuel: 100_000_000}}); err != nil {
		t.Errorf("a miss with enough fuel: %v", err)
	}
	wg.Wait()
}
