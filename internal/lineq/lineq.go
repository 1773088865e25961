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
	"sync/atomic"
)

// Queue is a bounded queue of lines in front of a writer. Write never
// blocks: when the queue is full the line is dropped and counted, and the
// next line that gets through is preceded by a marker saying how many were
// dropped. It is safe for concurrent use.
type Queue struct {
	work     *Worker[[]byte]
	w        io.Writer
	marker   func(dropped int64) []byte
	onDrop   func()
	dropped  atomic.Int64
	reported int64 // the worker's
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
	q := &Queue{w: w, marker: marker, onDrop: onDrop}
	q.work = NewWorker(size, q.write, q.report)
	return q
}

// DefaultMarker is the line that reports n lines dropped, when New is
// given no marker.
func DefaultMarker(n int64) []byte {
	return fmt.Appendf(nil, "[packd: %d lines dropped: the output was not read fast enough]\n", n)
}

// Write queues a copy of p (one or more whole lines) and never blocks.
func (q *Queue) Write(p []byte) (int, error) {
	if queued, closed := q.work.Put(append([]byte(nil), p...)); !queued && !closed {
		q.dropped.Add(1)
		if q.onDrop != nil {
			q.onDrop()
		}
	}
	return len(p), nil
}

// Dropped is how many lines were dropped so far.
func (q *Queue) Dropped() int64 { return q.dropped.Load() }

// write writes a line, after the marker of the lines dropped before it.
func (q *Queue) write(line []byte) {
	q.report()
	_, _ = q.w.Write(line)
}

// report writes the marker of the lines dropped since the last one.
func (q *Queue) report() {
	if n := q.dropped.Load(); n > q.reported {
		_, _ = q.w.Write(q.marker(n - q.reported))
		q.reported = n
	}
}

// Close stops taking lines and waits for the queued ones to be written
// until ctx is done (then its error). Safe twice.
func (q *Queue) Close(ctx context.Context) error { return q.work.Close(ctx) }
