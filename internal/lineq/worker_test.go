package lineq

import (
	"context"
	"testing"
	"time"
)

// TestAWorkerNeverMakesAPutWait: a worker whose handler is stuck takes as
// many items as its queue holds and refuses the next at once (queued
// false); once closed, a put says so (closed true); Close waits for the
// queued items, but no longer than its context, and hands them over in
// order once the handler goes on.
func TestAWorkerNeverMakesAPutWait(t *testing.T) {
	release := make(chan struct{})
	var got []int
	w := NewWorker(2, func(v int) {
		<-release
		got = append(got, v)
	}, func() { got = append(got, -1) })
	queued := 0
	for i := range 10 {
		if ok, closed := w.Put(i); ok {
			queued++
		} else if closed {
			t.Fatalf("put %d: closed before Close", i)
		}
	}
	if queued < 2 || queued > 3 { // two in the queue, one perhaps in the handler
		t.Fatalf("%d of 10 puts queued behind a stuck handler of a queue of 2", queued)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); err == nil {
		t.Fatal("Close returned before the stuck handler went on")
	}
	if ok, closed := w.Put(99); ok || !closed {
		t.Fatalf("a put after Close: queued %v, closed %v", ok, closed)
	}
	close(release)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != queued+1 || got[0] != 0 || got[len(got)-1] != -1 {
		t.Fatalf("handled %v", got)
	}
}
