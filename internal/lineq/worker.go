package lineq

import (
	"context"
	"sync"
	"time"
)

// Worker hands each item put to handle, in order, on a goroutine of its
// own, from a bounded queue: whoever puts an item (a call that ends) never
// waits for whoever handles it (a disk, a pipe nobody drains). Queue, the
// audit log and the record directory are each a Worker and what it
// handles. It is safe for concurrent use.
//
// A busy worker is not woken for every item: once woken it takes what is
// queued, then looks again every Gather for as long as it finds more, and
// waits to be woken only when a look finds none. A put into a queue whose
// worker waits wakes a thread to run it, a few microseconds; a service
// recording every call at c=32 on 2 cores paid it for nearly every call.
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
		for w.take(handle) {
		}
		if finish != nil {
			finish()
		}
	}()
	return w
}

// Gather is how long a worker that found items waits before it looks for
// more: the longest an item put meanwhile waits to be handled (but for the
// handler itself), and what a queue of size items must hold at the rate
// they come in (4096 items: 4 million a second).
const Gather = time.Millisecond

// take waits for an item, handles it and what follows as long as items
// keep coming (a look every Gather), and reports false once the queue is
// closed and empty.
func (w *Worker[T]) take(handle func(T)) bool {
	v, ok := <-w.ch
	if !ok {
		return false
	}
	handle(v)
	for {
		for more := true; more; {
			select {
			case v, ok := <-w.ch:
				if !ok {
					return false
				}
				handle(v)
			default:
				more = false
			}
		}
		time.Sleep(Gather)
		if len(w.ch) == 0 {
			return true // the next put wakes the worker
		}
	}
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
