package lineq

import (
	"context"
	"sync"
)

// Worker hands each item put to handle, in order, on a goroutine of its
// own, from a bounded queue: whoever puts an item (a call that ends) never
// waits for whoever handles it (a disk, a pipe nobody drains). Queue, the
// audit log and the record directory are each a Worker and what it
// handles. It is safe for concurrent use.
type Worker[T any] struct {
	ch     chan T
	mu     sync.RWMutex // held for writing by Close
	closed bool
	done   chan struct{}
}

// NewWorker starts a worker of size items (≤ 0: DefaultLines): handle is
// called for each item, then finish (if set) once Close has taken the
// last.
func NewWorker[T any](size int, handle func(T), finish func()) *Worker[T] {
	if size <= 0 {
		size = DefaultLines
	}
	w := &Worker[T]{ch: make(chan T, size), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for v := range w.ch {
			handle(v)
		}
		if finish != nil {
			finish()
		}
	}()
	return w
}

// Put queues v without waiting: queued is false when the queue is full or
// the worker is closed (then closed is true); v is then not handled.
func (w *Worker[T]) Put(v T) (queued, closed bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return false, true
	}
	select {
	case w.ch <- v:
		return true, false
	default:
		return false, false
	}
}

// Len is how many items wait.
func (w *Worker[T]) Len() int { return len(w.ch) }

// Close stops taking items and waits for the queued ones to be handled
// until ctx is done (then its error). Safe twice.
func (w *Worker[T]) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	w.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
