package lineq

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// counting is a writer that keeps what it got and how many writes it took.
type counting struct {
	mu     sync.Mutex
	got    bytes.Buffer
	writes int
}

func (c *counting) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return c.got.Write(p)
}

// TestBatchWritesEveryLineInOrder: lines from 8 goroutines all come out,
// once each, whole, each goroutine's in the order it wrote them.
func TestBatchWritesEveryLineInOrder(t *testing.T) {
	w := &counting{}
	b := NewBatch(w)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				_, _ = b.Write(fmt.Appendf(nil, "g%d line %d\n", g, i))
			}
		}()
	}
	wg.Wait()
	b.Close(within(t, 10*time.Second))
	next := map[string]int{}
	lines := strings.Split(strings.TrimSuffix(w.got.String(), "\n"), "\n")
	if len(lines) != 8*500 {
		t.Fatalf("%d lines out, want %d", len(lines), 8*500)
	}
	for _, l := range lines {
		var g string
		var i int
		if _, err := fmt.Sscanf(l, "%s line %d", &g, &i); err != nil || i != next[g] {
			t.Fatalf("line %q out of order or torn (want %s line %d)", l, g, next[g])
		}
		next[g]++
	}
}

// TestBatchCoalescesWhatArrivesDuringAWrite: while the writer is busy with
// one write, the lines that arrive go out together in the next.
func TestBatchCoalescesWhatArrivesDuringAWrite(t *testing.T) {
	w := &blocked{release: make(chan struct{})}
	b := NewBatch(w)
	_, _ = b.Write([]byte("first\n"))
	for i := 0; i < 100; i++ {
		_, _ = fmt.Fprintf(b, "line %d\n", i)
	}
	close(w.release)
	b.Close(within(t, 10*time.Second))
	want := "first\n"
	for i := 0; i < 100; i++ {
		want += fmt.Sprintf("line %d\n", i)
	}
	if got := w.got.String(); got != want {
		t.Fatalf("got %q", got)
	}
	c := &counting{}
	gate := make(chan struct{})
	b = NewBatch(writerFunc(func(p []byte) (int, error) { <-gate; return c.Write(p) }))
	_, _ = b.Write([]byte("a\n"))
	for i := 0; i < 100; i++ {
		_, _ = b.Write([]byte("b\n"))
	}
	close(gate)
	b.Close(within(t, 10*time.Second))
	if c.writes > 2 {
		t.Fatalf("101 lines written while the writer was busy took %d writes, want at most 2", c.writes)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestBatchHoldsItsWritersPastMaxPending: a reader that stops reading
// makes writers wait once MaxPending bytes wait, and nothing is lost.
func TestBatchHoldsItsWritersPastMaxPending(t *testing.T) {
	w := &blocked{release: make(chan struct{})}
	b := NewBatch(w)
	_, _ = b.Write([]byte("taken\n")) // the flusher takes it and waits in Write
	for i := 0; i < 100; i++ {        // until it surely has
		b.mu.Lock()
		n := len(b.pending)
		b.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	big := bytes.Repeat([]byte("x"), MaxPending-1)
	big = append(big, '\n')
	_, _ = b.Write(big) // MaxPending bytes wait now: returns
	held := make(chan struct{})
	go func() {
		_, _ = b.Write([]byte("held\n"))
		close(held)
	}()
	select {
	case <-held:
		t.Fatal("a write past MaxPending waiting bytes did not wait")
	case <-time.After(100 * time.Millisecond):
	}
	close(w.release)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the held write did not go through once the reader read")
	}
	b.Close(within(t, 10*time.Second))
	if got := w.got.String(); got != "taken\n"+string(big)+"held\n" {
		t.Fatalf("got %d bytes, want %d", len(got), len("taken\n")+len(big)+len("held\n"))
	}
}

// TestBatchCloseWaitsBoundedThenWritesDirectly: Close writes what is
// pending, gives up after its wait on a writer that never returns, and
// once it has stopped, writes go straight to the writer.
func TestBatchCloseWaitsBoundedThenWritesDirectly(t *testing.T) {
	w := &blocked{release: make(chan struct{})}
	b := NewBatch(w)
	_, _ = b.Write([]byte("stuck\n"))
	start := time.Now()
	b.Close(within(t, 50*time.Millisecond))
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close waited %v on a writer that never returns", d)
	}
	close(w.release)
	c := &counting{}
	b = NewBatch(c)
	_, _ = b.Write([]byte("before\n"))
	b.Close(within(t, 10*time.Second))
	b.Close(within(t, 10*time.Second)) // twice
	_, _ = b.Write([]byte("after\n"))
	if got := c.got.String(); got != "before\nafter\n" || c.writes != 2 {
		t.Fatalf("got %q in %d writes", got, c.writes)
	}
}

// TestBatchKeepsTheBuffersOfBusyRounds: rounds that each carry 200 KB go
// out of buffers the rounds before them filled, not of new ones grown
// from nothing under the writers' lock (before: a busy service's log
// lines cost about 1.5 KB a call); a buffer grown past
// what may wait is not kept. Every line still goes out, in order.
func TestBatchKeepsTheBuffersOfBusyRounds(t *testing.T) {
	turn := make(chan struct{}) // one write of the flusher's per send
	c := &counting{}
	b := NewBatch(writerFunc(func(p []byte) (int, error) { <-turn; return c.Write(p) }))
	line := append(bytes.Repeat([]byte("x"), 99), '\n')
	var want bytes.Buffer
	round := func(n int) {
		for i := range n {
			l := fmt.Appendf(nil, "%d %s", i, line)
			_, _ = b.Write(l)
			want.Write(l)
		}
	}
	pending := func() (n, capacity int) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.pending), cap(b.pending)
	}
	// next lets the write under way return and waits until the flusher
	// has taken what is pending into its next write.
	next := func() {
		t.Helper()
		turn <- struct{}{}
		for range 1000 {
			if n, _ := pending(); n == 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatal("the flusher did not take what was pending")
	}
	round(1)
	for n, _ := pending(); n > 0; n, _ = pending() {
		time.Sleep(time.Millisecond)
	}
	const busy = 2000 // about 200 KB a round
	for range 4 {
		round(busy)
		next()
	}
	if _, capacity := pending(); capacity < busy*len(line) {
		t.Fatalf("after busy rounds the next one starts with room for %d bytes, want %d", capacity, busy*len(line))
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case turn <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
	err := b.Close(within(t, 10*time.Second))
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	if c.got.String() != want.String() {
		t.Fatalf("wrote %d bytes, want %d, in order", c.got.Len(), want.Len())
	}
	if keep(make([]byte, 10, keepBuffer+1)) != nil {
		t.Fatal("a buffer larger than keepBuffer is kept")
	}
	if kept := keep(make([]byte, 10, keepBuffer)); len(kept) != 0 || cap(kept) != keepBuffer {
		t.Fatalf("a buffer of keepBuffer bytes is kept as %d of %d", len(kept), cap(kept))
	}
}
