package lineq

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// blocked is a writer nobody reads: every Write waits until released.
type blocked struct {
	release chan struct{}
	mu      sync.Mutex
	got     bytes.Buffer
}

func (b *blocked) Write(p []byte) (int, error) {
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got.Write(p)
}

func TestWriteNeverBlocksAndSaysWhatItDropped(t *testing.T) {
	w := &blocked{release: make(chan struct{})}
	drops := 0
	q := New(w, 4, nil, func() { drops++ })
	done := make(chan struct{})
	go func() {
		for i := 0; i < 100; i++ {
			_, _ = q.Write([]byte("line\n"))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Write blocked on a writer nobody reads")
	}
	// Four lines are queued, perhaps one more is with the writer: the rest
	// were dropped.
	if q.Dropped() < 95 || int64(drops) != q.Dropped() {
		t.Fatalf("dropped %d, counted %d", q.Dropped(), drops)
	}
	close(w.release)
	q.Close(within(t, 10*time.Second))
	out := w.got.String()
	if !strings.Contains(out, "lines dropped: the output was not read fast enough]\n") || strings.Count(out, "line\n") != 100-int(q.Dropped()) {
		t.Fatalf("got %q", out)
	}
	if _, err := q.Write([]byte("late\n")); err != nil || strings.Contains(w.got.String(), "late") {
		t.Fatal("a closed queue took a line")
	}
	q.Close(within(t, time.Second))
}
