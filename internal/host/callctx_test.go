package host

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// waitDone waits for ctx's Done channel, at most 5 s.
func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context was not done within 5 s")
	}
}

func isDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// TestADeadlineContextEndsAtItsDeadline: a call's context answers
// deadline-exceeded once its deadline has passed, whether something
// waited on its Done channel before (a timer closes it) or asks only
// after (it reads the clock, then is done at once), and keeps that error
// once released.
func TestADeadlineContextEndsAtItsDeadline(t *testing.T) {
	before := time.Now()
	ctx, release := withDeadline(context.Background(), 20*time.Millisecond)
	if d, ok := ctx.Deadline(); !ok || d.Before(before.Add(20*time.Millisecond)) || d.After(time.Now().Add(20*time.Millisecond)) {
		t.Fatalf("deadline %v, %v", d, ok)
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("before the deadline: %v", err)
	}
	waitDone(t, ctx)
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after: %v", err)
	}
	release()
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("released after its deadline: %v", err)
	}

	// Nothing waited before the deadline: a wait after it ends at once.
	ctx, release = withDeadline(context.Background(), time.Millisecond)
	defer release()
	d, _ := ctx.Deadline()
	for time.Now().Before(d) {
		time.Sleep(time.Millisecond)
	}
	if !isDone(ctx) {
		t.Fatal("past the deadline, Done is open")
	}
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past the deadline: %v", err)
	}
}

// TestADeadlineContextEndsWithItsParent: a caller that goes away cancels
// its call, asked before or after.
func TestADeadlineContextEndsWithItsParent(t *testing.T) {
	for _, armFirst := range []bool{false, true} {
		parent, cancel := context.WithCancel(context.Background())
		ctx, release := withDeadline(parent, time.Hour)
		if armFirst && isDone(ctx) {
			t.Fatal("done before its parent")
		}
		cancel()
		if armFirst {
			waitDone(t, ctx)
		}
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("arm first %v: %v", armFirst, err)
		}
		if !isDone(ctx) {
			t.Fatalf("arm first %v: Err said cancelled, Done is open", armFirst)
		}
		release()
	}
}

// TestAReleasedDeadlineContextIsCancelled: after its release a call's
// context is cancelled, as context.WithTimeout's is after its cancel, and
// what waits on it is told.
func TestAReleasedDeadlineContextIsCancelled(t *testing.T) {
	for _, armFirst := range []bool{false, true} {
		ctx, release := withDeadline(context.Background(), time.Hour)
		var told chan struct{}
		if armFirst {
			told = make(chan struct{})
			context.AfterFunc(ctx, func() { close(told) })
		}
		release()
		release() // twice is harmless
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("arm first %v: %v", armFirst, err)
		}
		waitDone(t, ctx)
		if armFirst {
			select {
			case <-told:
			case <-time.After(5 * time.Second):
				t.Fatal("an AfterFunc was not run at the release")
			}
		}
	}
}

// TestADeadlineContextHasTheEarlierDeadline: a parent's earlier deadline
// is the call's, as with context.WithTimeout.
func TestADeadlineContextHasTheEarlierDeadline(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	pd, _ := parent.Deadline()
	ctx, release := withDeadline(parent, time.Hour)
	defer release()
	if d, _ := ctx.Deadline(); !d.Equal(pd) {
		t.Fatalf("deadline %v, the parent's %v", d, pd)
	}
	waitDone(t, ctx)
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}

	// The parent's values, armed or not, released or not.
	type key struct{}
	for _, arm := range []bool{false, true} {
		vctx, release := withDeadline(context.WithValue(context.Background(), key{}, "v"), time.Hour)
		if arm {
			_ = vctx.Done()
		}
		if vctx.Value(key{}) != "v" {
			t.Fatalf("armed %v: the parent's value is lost", arm)
		}
		release()
		if vctx.Value(key{}) != "v" {
			t.Fatalf("armed %v: the parent's value is lost at the release", arm)
		}
	}
}

// wrapped is a context that wraps another, as the sandbox's call state
// does: only the wrapped one's Deadline, Done, Err and Value show.
type wrapped struct{ context.Context }

// TestADeadlineContextsChildrenNeedNoGoroutine: contexts made from a
// call's (context.WithCancel, context.AfterFunc: the sandbox's outbound
// requests make them), directly or through a context that wraps it, end
// with it, and none costs a goroutine that waits for it (one that did
// read the sandbox's call state after the call had reused it: a race).
func TestADeadlineContextsChildrenNeedNoGoroutine(t *testing.T) {
	for _, wrap := range []bool{false, true} {
		parent, cancel := context.WithCancel(context.Background())
		ctx, release := withDeadline(parent, time.Hour)
		from := ctx
		if wrap {
			from = wrapped{ctx}
		}
		before := runtime.NumGoroutine()
		const n = 200
		children := make([]context.Context, n)
		stops := make([]context.CancelFunc, n)
		var ran sync.WaitGroup
		ran.Add(n)
		for i := range children {
			children[i], stops[i] = context.WithCancel(from)
			context.AfterFunc(from, ran.Done)
		}
		if after := runtime.NumGoroutine(); after-before > n/10 {
			t.Fatalf("wrapped %v: %d goroutines before %d children, %d after", wrap, before, n, after)
		}
		cancel()
		for _, c := range children {
			waitDone(t, c)
		}
		ran.Wait()
		for _, stop := range stops {
			stop()
		}
		release()
	}
}

// TestADeadlineContextUsedConcurrently: Err, Done, AfterFunc and the
// release from several goroutines at once (run under -race).
func TestADeadlineContextUsedConcurrently(t *testing.T) {
	for range 50 {
		parent, cancel := context.WithCancel(context.Background())
		ctx, release := withDeadline(parent, time.Millisecond)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch i {
				case 0:
					for ctx.Err() == nil {
						runtime.Gosched()
					}
				case 1:
					<-ctx.Done()
				case 2:
					stop := context.AfterFunc(ctx, func() {})
					stop()
				case 3:
					cancel()
				}
			}()
		}
		wg.Wait()
		cancel()
		release()
		if ctx.Err() == nil || !isDone(ctx) {
			t.Fatal("not done after its parent's cancel")
		}
	}
}
