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

// TestAWorkerHandsOverWhatComesWhileItGathers: items put while the worker
// gathers (after it took one, before it waits to be woken again) are all
// handled, in order, with no put refused; Close then hands over the rest
// and returns: a worker that looked once a Gather for each item would
// take a second for them.
func TestAWorkerHandsOverWhatComesWhileItGathers(t *testing.T) {
	handled := make(chan int, 1000)
	w := NewWorker(1000, func(v int) { handled <- v }, nil)
	if ok, _ := w.Put(0); !ok {
		t.Fatal("the first put was refused")
	}
	if v := <-handled; v != 0 {
		t.Fatalf("handled %d first", v)
	}
	for i := 1; i < 1000; i++ { // the worker gathers now
		if ok, _ := w.Put(i); !ok {
			t.Fatalf("put %d refused", i)
		}
	}
	start := time.Now()
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("Close took %v", d)
	}
	close(handled)
	want := 1
	for v := range handled {
		if v != want {
			t.Fatalf("handled %d, want %d", v, want)
		}
		want++
	}
	if want != 1000 {
		t.Fatalf("handled %d of 1000", want)
	}
}
