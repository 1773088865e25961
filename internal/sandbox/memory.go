package sandbox

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memBudget is the bytes of linear memory every instance of a sandbox may
// hold together (Config.MemoryBudget). Instances take from it when their
// memory is allocated and grown, and give it back when they close.
type memBudget struct {
	limit int64 // 0: no limit (used is still counted)
	used  atomic.Int64
	// holders are the sandboxes counting in the budget, oldest first,
	// whose idle pooled instances reclaim closes: memory held by an idle
	// instance never refuses a call.
	mu      sync.Mutex
	holders []*Sandbox
}

func (b *memBudget) take(n int64) bool {
	if b.try(n) {
		return true
	}
	return b.reclaim(n) && b.try(n)
}

func (b *memBudget) join(s *Sandbox) {
	b.mu.Lock()
	b.holders = append(b.holders, s)
	b.mu.Unlock()
}

func (b *memBudget) leave(s *Sandbox) {
	b.mu.Lock()
	b.holders = slices.DeleteFunc(b.holders, func(h *Sandbox) bool { return h == s })
	b.mu.Unlock()
}

// reclaim closes idle pooled instances of the holders, the oldest
// holder's first (a sandbox being replaced serves no new calls), until n
// more bytes fit, and reports whether any was closed.
func (b *memBudget) reclaim(n int64) bool {
	b.mu.Lock()
	holders := slices.Clone(b.holders)
	b.mu.Unlock()
	closed := false
	for _, s := range holders {
		if s.reclaim(n) {
			closed = true
		}
		if b.fits(n) {
			break
		}
	}
	return closed
}

// fits says whether n more bytes fit now.
func (b *memBudget) fits(n int64) bool { return b.limit <= 0 || b.used.Load()+n <= b.limit }

func (b *memBudget) try(n int64) bool {
	for {
		used := b.used.Load()
		if b.limit > 0 && used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (b *memBudget) give(n int64) { b.used.Add(-n) }

// callMemory is one call's share of the budget: what it reserved before
// instantiating (its module's initial memory), then what its memory grew by.
// An instance's memory that cannot get more from the budget does not grow
// (memory.grow returns -1).
type callMemory struct {
	budget  *memBudget
	maps    *mappings
	prepaid int64     // reserved, not yet allocated
	image   *memImage // when set, the memory maps this snapshot image
	linear  *mmapMemory
	// limit bounds the memory of the call it serves, in bytes (0: only the
	// sandbox's MemoryLimitPages): Request.MemoryLimit. A pooled instance's
	// is set for each of its calls.
	limit int64
	// account is the account of the call it serves (Request.Account), and
	// held what it was charged (account.go).
	account *MemoryAccount
	held    int64
	// state is the call's, for its deadline (memory_linux.go: populate).
	state *callState
}

// fits reports whether the memory may be size bytes under the call's limit.
func (c *callMemory) fits(size uint64) bool { return c.limit <= 0 || size <= uint64(c.limit) }

// allocator is what allocates the instance memory of c: mapped (Linux) or
// on the Go heap (elsewhere, and in the portable mode the tests use); both
// keep to the budget and the call's limit.
func (c *callMemory) allocator() experimental.MemoryAllocator {
	if ownMemory() {
		return c
	}
	return heapAllocator{c}
}

type heapAllocator struct{ c *callMemory }

func (a heapAllocator) Allocate(_, max uint64) experimental.LinearMemory {
	return &heapMemory{call: a.c, max: max}
}

// heapMemory is linear memory on the Go heap: where packd does not map
// memory, or mapping fails.
type heapMemory struct {
	call *callMemory
	buf  []byte
	max  uint64
}

func (h *heapMemory) Reallocate(size uint64) []byte {
	if size > h.max || !h.call.fits(size) {
		return nil
	}
	if grow := int64(size) - int64(len(h.buf)); grow > 0 {
		if !h.call.take(grow) {
			return nil
		}
		h.buf = append(h.buf, make([]byte, grow)...)
	}
	return h.buf[:size:size]
}

func (h *heapMemory) Free() {
	h.call.budget.give(int64(len(h.buf)))
	h.buf = nil
}

func (c *callMemory) take(n int64) bool {
	from := min(n, c.prepaid)
	need := n - from
	if !c.account.take(need) {
		c.refused()
		return false
	}
	if !c.budget.take(need) {
		c.account.give(need)
		c.refused()
		return false
	}
	if c.account != nil {
		c.held += need
	}
	c.prepaid -= from
	return true
}

// refused notes in the call's state that the budget or its account, not
// its limit, refused memory: what its guest computes then depends on the
// other calls.
func (c *callMemory) refused() {
	if c.state != nil {
		c.state.memoryRefused = true
	}
}

// give gives back n bytes taken for a grow that did not happen.
func (c *callMemory) give(n int64) {
	c.budget.give(n)
	if c.account != nil {
		c.account.give(n)
		c.held -= n
	}
}

// release gives back what was reserved and never allocated.
func (c *callMemory) release() {
	c.budget.give(c.prepaid)
	if c.account != nil {
		c.account.give(c.prepaid)
		c.held -= c.prepaid
	}
	c.prepaid = 0
}

// Debugging hooks, set by the package's tests to run the pool as it runs
// elsewhere: forceReset picks how a reset finds the pages a call wrote
// (PAGEMAP_SCAN on Linux 6.7+, reading /proc/self/pagemap on older
// kernels, or copying the whole snapshot back); portableMemory makes
// instance memory wazero's own and takes no snapshot image, as on systems
// without mmap and memfd.
// pageSize is the unit a reset copies back in.
const pageSize = 4096

const (
	resetAuto = iota
	resetScan
	resetPagemap
	resetCopy
)

var (
	forceReset     = resetAuto
	portableMemory bool
)

// ownMemory reports whether packd allocates instance memory (mmap).
func ownMemory() bool { return mmapAvailable && !portableMemory }
