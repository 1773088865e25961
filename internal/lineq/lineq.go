// Package lineq writes whole lines to a writer from a goroutine of its own:
// Queue so that whoever produces them (a guest's output) never waits for
// whoever reads them (a log shipper, a pipe nobody drains), dropping what
// does not fit; Batch so that a busy producer (the service's records) pays
// a write for many lines, not one each, and loses none.
package lineq

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// Queue is a bounded queue of lines in front of a writer. Write never
// blocks: when the queue is full the line is dropped and counted, and the
// next line that gets through is preceded by a marker saying how many were
// dropped. It is safe for concurrent use.
type Queue struct {
	ch      chan []byte
	w       io.Writer
	marker  func(dropped int64) []byte
	onDrop  func()
	dropped atomic.Int64
	mu      sync.RWMutex // held for writing by Close
	closed  bool
	done    chan struct{}
}

// DefaultLines is the queue length New uses for size ≤ 0.
const DefaultLines = 4096

// New starts a queue of size lines in front of w. marker formats the line
// that reports drops (nil: a plain "[packd: N lines dropped ...]"); onDrop,
// if set, is called for every dropped line (a metric).
func New(w io.Writer, size int, marker func(dropped int64) []byte, onDrop func()) *Queue {
	if size <= 0 {
		size = DefaultLines
	}
	if marker == nil {
		marker = DefaultMarker
	}
	q := &Queue{ch: make(chan []byte, size), w: w, marker: marker, onDrop: onDrop, done: make(chan struct{})}
	go q.run()
	return q
}

// DefaultMarker is the line that reports n lines dropped, when New is
// given no marker.
func DefaultMarker(n int64) []byte {
	return fmt.Appendf(nil, "[packd: %d lines dropped: the output was not read fast enough]\n", n)
}

// Write queues a copy of p (one or more whole lines) and never blocks.
func (q *Queue) Write(p []byte) (int, error) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return len(p), nil
	}
	select {
	case q.ch <- append([]byte(nil), p...):
	default:
		q.dropped.Add(1)
		if q.onDrop != nil {
			q.onDrop()
		}
	}
	return len(p), nil
}

// Dropped is how many lines were dropped so far.
func (q *Queue) Dropped() int64 { return q.dropped.Load() }

func (q *Queue) run() {
	defer close(q.done)
	var reported int64
	for line := range q.ch {
		if n := q.dropped.Load(); n > reported {
			_, _ = q.w.Write(q.marker(n - reported))
			reported = n
		}
		_, _ = q.w.Write(line)
	}
	if n := q.dropped.Load(); n > reported {
		_, _ = q.w.Write(q.marker(n - reported))
	}
}

// Close stops taking lines and waits for the queued ones to be written
// until ctx is done (then its error). Safe twice.
func (q *Queue) Close(ctx context.Context) error {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
