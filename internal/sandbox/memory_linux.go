package sandbox

import (
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapAvailable: on Linux, instance memory is mapped outside the Go heap
// (RATIONALE.md, "Why mmap for instance memory?"): growing it never copies,
// and what a call used goes back to the system soon after it ends.
const mmapAvailable = true

// Allocate takes a mapping of max bytes from the pool; the slice handed to
// wazero never reaches past what the budget granted.
func (c *callMemory) Allocate(_, max uint64) experimental.LinearMemory {
	m := &mmapMemory{call: c}
	switch {
	case max == 0 || max > 1<<32:
	case c.image != nil:
		if m.buf = mapImage(c.image, int(max)); m.buf != nil {
			m.image = c.image
		}
	default:
		m.buf = c.maps.get(int(max))
	}
	if m.buf == nil && max > 0 && max <= 1<<32 {
		// No mapping to be had: wazero cannot take a nil memory, so the
		// memory is an ordinary slice, still under the budget.
		return &heapMemory{call: c, max: max}
	}
	c.linear = m
	return m
}

type mmapMemory struct {
	call  *callMemory
	buf   []byte    // the whole mapping, nil when mapping failed
	size  uint64    // bytes taken from the budget, and all the guest could touch
	image *memImage // set when buf starts with a copy-on-write mapping of it
	// huge is set once a grow asked for huge pages (populate, hugeGrow).
	huge bool
	// private is what the last scan of an image mapping found.
	private privatePages
}

// Reallocate grows the memory to size bytes, or returns nil (the grow fails)
// when the mapping or the budget cannot hold it.
func (m *mmapMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) || !m.call.fits(size) {
		return nil
	}
	if size > m.size {
		n := int64(size - m.size)
		if !m.call.take(n) {
			return nil
		}
		// What a memory.grow adds is faulted in here, where its price is
		// paid and the deadline can stop it; what the instance starts
		// with is not, nor what maps a snapshot's image (shared until
		// written: an instance made from a snapshot grows to its size).
		from := m.size
		if m.image != nil {
			from = max(from, uint64(len(m.image.data)))
		}
		if m.size > 0 && from < size {
			huge := size-from >= hugeGrow
			m.huge = m.huge || huge
			if !m.call.populate(m.buf[from:size], huge) {
				m.call.give(n)
				return nil
			}
		}
		m.size = size
	}
	return m.buf[:size:size]
}

// madvPopulateWrite faults pages in writable (Linux 5.14+); madvHugepage
// asks for transparent huge pages.
const (
	madvPopulateWrite = 23
	madvHugepage      = 14
)

// populateChunk is the bytes faulted in between two looks at the deadline
// (and chances to yield the core), a fraction of a millisecond.
const populateChunk = 1 << 20

// populate faults in the pages of b, memory a memory.grow just added, in
// chunks, each after a look at the call's deadline; it reports false,
// leaving the rest, once the deadline has passed (the grow then fails and
// the guest is stopped at its next refill). Every page of freshly mapped
// memory is a fault on first touch, which fuel cannot see: a guest that
// grew 1 GiB at once and wrote a byte to each 4 KiB page spent ten units of
// fuel a fault, and ran far past its deadline between two refills. It
// yields the core between chunks as guest code does at its refills, and
// faults with a raw call, which keeps the core's P as the guest's own
// faults would (a blocking one hands it to another goroutine while this
// thread goes on faulting pages in, one more thread running than there
// are cores).
//
// With huge set (a grow of hugeGrow or more) it asks for huge pages first,
// where the kernel has them (THP madvise or always): one fault for 2 MiB,
// and under a hypervisor that shadows page tables (this CI's) the guest's
// first writes no longer fault each 4 KiB page again, whatever the kernel
// populated: 6 us a page, 300 ms of guest code for 192 MiB, fuel unspent,
// holding a core's P with no refill to yield it. The zeroing is paid here
// instead, in chunks that yield and look at the deadline (tenant B's p99
// beside a flood of 192 MiB hogs: a median of 2.1x of alone without, 1.3x
// with, make fairload). Where they are refused the pages are small, as
// before.
func (c *callMemory) populate(b []byte, huge bool) bool {
	if huge {
		_, _, _ = syscall.RawSyscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), madvHugepage)
	}
	st := c.state
	for off := 0; off < len(b); off += populateChunk {
		if st != nil && st.tick() {
			return false
		}
		chunk := b[off:min(off+populateChunk, len(b))]
		if _, _, e := syscall.RawSyscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)), madvPopulateWrite); e != 0 {
			for i := 0; i < len(chunk); i += pageSize {
				chunk[i] = 0 // an older kernel: a write faults the page in
			}
		}
	}
	return true
}

// hugeGrow is the smallest grow that asks for huge pages: two of them. A
// mapping that has them is unmapped when freed, not pooled for another
// instance (whose first small touch would zero 2 MiB).
const hugeGrow = 4 << 20

// Free gives the mapping back to the pool, and its bytes to the budget.
func (m *mmapMemory) Free() {
	switch {
	case m.buf == nil:
	case m.image != nil, m.huge:
		_ = syscall.Munmap(m.buf)
	default:
		m.call.maps.put(m.buf, int(m.size))
	}
	m.buf = nil
	m.call.budget.give(int64(m.size))
	m.size = 0
}

// shrink sets the memory back to size bytes, less than it has, for a
// reset to a snapshot of that size: the bytes past size read as zeros
// again (the first keepWarm of them cleared and kept, so a call that grows
// as the last one did faults nothing in; the rest given back), and the
// budget gets them back. It reports false when the memory is not an image
// mapping or the kernel would not drop the pages; the instance must then
// be closed.
func (m *mmapMemory) shrink(size uint64) bool {
	if m.buf == nil || m.image == nil || size < uint64(len(m.image.data)) || size >= m.size {
		return false
	}
	end, keep := m.size, min(m.size, size+keepWarm)
	if keep < end && syscall.Madvise(m.buf[keep:end], syscall.MADV_DONTNEED) != nil {
		return false
	}
	clear(m.buf[size:keep])
	m.call.give(int64(end - size))
	m.size = size
	return true
}

// Pool limits: how many mappings wait for reuse, how much of each stays
// committed (zeroed) while it waits, and how long one may wait.
const (
	poolMax  = 64
	keepWarm = 8 << 20
	idleFor  = 10 * time.Second
)

// mappings pools instance memory mappings: a fresh mapping costs a page
// fault on every page the guest touches, which on some machines is most of
// a small call's cost. A mapping comes back zeroed: its first keepWarm bytes
// cleared, the rest returned to the system (MADV_DONTNEED reads as zeros).
type mappings struct {
	mu     sync.Mutex
	free   map[int][]pooled // by length
	n      int
	stop   chan struct{}
	closed bool
}

type pooled struct {
	buf   []byte
	since time.Time
}

func newMappings() *mappings {
	p := &mappings{free: map[int][]pooled{}, stop: make(chan struct{})}
	go p.janitor()
	return p
}

func (p *mappings) get(length int) []byte {
	p.mu.Lock()
	if list := p.free[length]; len(list) > 0 {
		b := list[len(list)-1].buf
		p.free[length] = list[:len(list)-1]
		p.n--
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	b, err := syscall.Mmap(-1, 0, length, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return b
}

// put zeroes what the guest could have written ([0, used)) and pools the
// mapping, or unmaps it when the pool is full or closed.
func (p *mappings) put(b []byte, used int) {
	p.mu.Lock()
	full := p.closed || p.n >= poolMax
	p.mu.Unlock()
	if !full && used > keepWarm && syscall.Madvise(b[keepWarm:used], syscall.MADV_DONTNEED) != nil {
		full = true
	}
	if full {
		_ = syscall.Munmap(b)
		return
	}
	clear(b[:min(used, keepWarm)])
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.n >= poolMax {
		_ = syscall.Munmap(b)
		return
	}
	p.free[len(b)] = append(p.free[len(b)], pooled{b, time.Now()})
	p.n++
}

// janitor unmaps mappings that waited longer than idleFor, so that memory
// a burst took goes back to the system once the burst is over.
func (p *mappings) janitor() {
	every(idleFor/4, p.stop, func(now time.Time) { p.trim(now.Add(-idleFor)) })
}

// trim unmaps the mappings pooled before cutoff (all of them for a zero
// cutoff far in the future).
func (p *mappings) trim(cutoff time.Time) {
	p.mu.Lock()
	var old [][]byte
	for length, list := range p.free {
		keep := list[:0]
		for _, e := range list {
			if e.since.Before(cutoff) {
				old = append(old, e.buf)
			} else {
				keep = append(keep, e)
			}
		}
		p.free[length] = keep
		p.n -= len(list) - len(keep)
	}
	p.mu.Unlock()
	for _, b := range old {
		_ = syscall.Munmap(b)
	}
}

// close unmaps every pooled mapping and stops the janitor. Safe twice.
func (p *mappings) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.stop)
	p.mu.Unlock()
	p.trim(time.Now().Add(time.Hour))
}
