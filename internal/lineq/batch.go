package lineq

import (
	"context"
	"io"
	"sync"
	"time"
)

// Batch writes what it is given to a writer from a goroutine of its own,
// in as few writes as it can: whatever arrives within Window of the first
// line, or while a write is under way, goes out, in order, with it. A
// service's records written to stderr one write each cost a system call
// per call served, and when stderr is a pipe, a wake-up of its reader as
// well; batched, a busy service writes many in one go.
//
// Unlike Queue, Batch never drops: a writer waits while MaxPending bytes
// or more wait to go out. It is safe for concurrent use.
type Batch struct {
	w       io.Writer
	mu      sync.Mutex
	taken   *sync.Cond // the flusher took what was pending, or stopped
	pending []byte
	spare   []byte
	closing bool
	closed  bool // the flusher has stopped: writes go straight to w
	kick    chan struct{}
	done    chan struct{}
}

// MaxPending is how many bytes may wait in a Batch before its writers do.
const MaxPending = 1 << 20

// Window is how long a Batch gathers lines before it writes them: the
// longest a line waits (but for the writer itself) when nothing else is
// pending.
const Window = time.Millisecond

// keepBuffer is the largest buffer a Batch keeps for a later round: room
// for as much as a round can hold (MaxPending waiting, and the write that
// passed it, grown as append grows), so that a busy service's rounds,
// which a busy scheduler stretches to milliseconds, go out of the buffers
// the rounds before them grew. Keeping none past 64 KiB made such a batch
// grow a new one from nothing at every round, under the writers' lock:
// about 1.5 KB allocated a call in BenchmarkInvokeServedParallel/off.
// Two buffers at most are kept.
const keepBuffer = 2 * MaxPending

// keep is a round's buffer out, empty, for a later round; nil when it is
// larger than keepBuffer (a burst's, grown past what may wait).
func keep(out []byte) []byte {
	if cap(out) > keepBuffer {
		return nil
	}
	return out[:0]
}

// NewBatch starts a Batch in front of w.
func NewBatch(w io.Writer) *Batch {
	b := &Batch{w: w, kick: make(chan struct{}, 1), done: make(chan struct{})}
	b.taken = sync.NewCond(&b.mu)
	go b.run()
	return b
}

// Write queues a copy of p, to be written after everything written before
// it. It waits only while MaxPending bytes wait already; after Close it
// writes p itself.
func (b *Batch) Write(p []byte) (int, error) {
	b.mu.Lock()
	for len(b.pending) >= MaxPending && !b.closed {
		b.taken.Wait()
	}
	if b.closed {
		defer b.mu.Unlock()
		return b.w.Write(p)
	}
	b.pending = append(b.pending, p...)
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default: // a round is due already, and will take p
	}
	return len(p), nil
}

func (b *Batch) run() {
	defer close(b.done)
	for range b.kick {
		// What a busy service writes in the next moment goes out with
		// this: a write takes microseconds, a call tens of them, so
		// without the wait nearly every write would carry one line.
		time.Sleep(Window)
		for {
			b.mu.Lock()
			out := b.pending
			if len(out) == 0 {
				if b.closing {
					b.closed = true
					b.taken.Broadcast()
					b.mu.Unlock()
					return
				}
				b.mu.Unlock()
				break
			}
			b.pending = b.spare[:0]
			b.taken.Broadcast()
			b.mu.Unlock()
			_, _ = b.w.Write(out)
			b.mu.Lock()
			b.spare = keep(out)
			b.mu.Unlock()
		}
	}
}

// Close writes what is pending, waiting for it until ctx is done (then
// its error), and stops: later writes go straight to the writer. Safe
// twice.
func (b *Batch) Close(ctx context.Context) error {
	b.mu.Lock()
	first := !b.closing
	b.closing = true
	b.mu.Unlock()
	if first {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
