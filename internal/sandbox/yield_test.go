package sandbox_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// TestASpinningGuestLetsOthersRun: on one core, a guest spinning in wasm
// lets another goroutine run about every millisecond (the refill yields),
// not only when Go preempts it after 10 ms: with every core in guest code,
// a call whose sleep ended waited that long for each guest ahead of it,
// and deadline-exceeded answers came up to 78 ms late (make deadlineload;
// now p99 5 ms). Both counts are against the same clock, so a machine
// that runs the test slowly slows both.
func TestASpinningGuestLetsOthersRun(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{DefaultFuel: sandbox.MaxFuel})
	m := compile(t, sb, hostile("loop"))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var turns atomic.Int64
	var done atomic.Bool
	go func() {
		for !done.Load() {
			turns.Add(1)
			runtime.Gosched()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Call(ctx, sandbox.Request{Body: []byte(`{}`)})
	took := time.Since(start)
	done.Store(true)
	if !errors.Is(err, sandbox.ErrDeadline) {
		t.Fatalf("the spinner: %v", err)
	}
	t.Logf("the other goroutine ran %d times in the guest's %v", turns.Load(), took)
	if n, want := turns.Load(), int64(took/(3*time.Millisecond)); n < want {
		t.Fatalf("the other goroutine ran %d times in the guest's %v, want at least %d (one every 3 ms)", n, took, want)
	}
}
