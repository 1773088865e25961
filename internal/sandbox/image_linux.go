package sandbox

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Snapshot images (pooled instances): the snapshot's memory lives in a
// sealed memfd that every later instance maps copy-on-write, so a page the
// guest never writes is shared and costs nothing to reset, and PAGEMAP_SCAN
// (Linux 6.7+) tells which pages a call made private, the only ones the
// reset copies back.

const (
	mfdCloexec      = 0x1
	mfdAllowSealing = 0x2
	fAddSeals       = 1033
	fSealSeal       = 0x1
	fSealShrink     = 0x2
	fSealGrow       = 0x4
	fSealWrite      = 0x8
)

// memImage is a snapshot's memory in a sealed memfd.
type memImage struct {
	mu     sync.RWMutex // close waits for mappings being made
	closed bool
	fd     int
	// data is the memfd mapped shared and read-only (the seals forbid
	// writing it, and making it writable): the snapshot's bytes as every
	// reset copies them back, without a copy on the Go heap beside the
	// memfd (4.4 MiB a Go module). It is unmapped once nothing refers to
	// the image (runtime.AddCleanup): no snapshot, no instance.
	data []byte
}

func memfdCreateNumber() uintptr {
	switch runtime.GOARCH {
	case "amd64":
		return 319
	case "arm64", "riscv64", "loong64":
		return 279
	}
	return 0
}

// newMemImage puts a copy of data (whole pages) in a sealed memfd; nil
// when the system cannot.
func newMemImage(data []byte) *memImage {
	nr := memfdCreateNumber()
	if nr == 0 || len(data)%pageSize != 0 || len(data) == 0 {
		return nil
	}
	name := []byte("packd-snapshot\x00")
	fd, _, e := syscall.Syscall(nr, uintptr(unsafe.Pointer(&name[0])), mfdCloexec|mfdAllowSealing, 0)
	if e != 0 {
		return nil
	}
	img := &memImage{fd: int(fd)}
	if syscall.Ftruncate(img.fd, int64(len(data))) != nil {
		img.close()
		return nil
	}
	// Pages of zeros stay holes: they read as zeros and take no memory.
	var zero [pageSize]byte
	for p := 0; p < len(data); {
		if bytes.Equal(data[p:p+pageSize], zero[:]) {
			p += pageSize
			continue
		}
		end := p + pageSize
		for end < len(data) && !bytes.Equal(data[end:end+pageSize], zero[:]) {
			end += pageSize
		}
		for p < end {
			n, err := syscall.Pwrite(img.fd, data[p:end], int64(p))
			if err != nil || n <= 0 {
				img.close()
				return nil
			}
			p += n
		}
	}
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(img.fd), fAddSeals, fSealShrink|fSealGrow|fSealWrite|fSealSeal); e != 0 {
		img.close()
		return nil
	}
	view, err := syscall.Mmap(img.fd, 0, len(data), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		img.close()
		return nil
	}
	img.data = view
	runtime.AddCleanup(img, func(b []byte) { _ = syscall.Munmap(b) }, view)
	return img
}

// close closes the memfd; mappings of it keep it alive. Safe twice.
func (img *memImage) close() {
	if img == nil {
		return
	}
	img.mu.Lock()
	defer img.mu.Unlock()
	if !img.closed {
		img.closed = true
		_ = syscall.Close(img.fd)
	}
}

// mapImage maps max bytes whose start is img, copy-on-write; nil when it
// cannot (img closed, no memory).
func mapImage(img *memImage, max int) []byte {
	img.mu.RLock()
	defer img.mu.RUnlock()
	if img.closed || max < len(img.data) {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, max, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	base := uintptr(unsafe.Pointer(&b[0]))
	_, _, e := syscall.Syscall6(syscall.SYS_MMAP, base, uintptr(len(img.data)), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_FIXED, uintptr(img.fd), 0)
	if e != 0 {
		_ = syscall.Munmap(b)
		return nil
	}
	return b
}

// adopt maps img over the start of m's mapping, which holds what img was
// made from: the memory reads the same and resets like one made by
// mapImage, so the instance that took a snapshot serves calls without a
// second instantiation. It reports false when it cannot; the mapping may
// then be gone, and the instance must be closed unused (Free unmaps it).
func (m *mmapMemory) adopt(img *memImage) bool {
	if img == nil || m.buf == nil || m.image != nil || len(m.buf) < len(img.data) || m.size != uint64(len(img.data)) {
		return false
	}
	img.mu.RLock()
	defer img.mu.RUnlock()
	if img.closed {
		return false
	}
	m.image = img // from here on, Free unmaps
	base := uintptr(unsafe.Pointer(&m.buf[0]))
	_, _, e := syscall.Syscall6(syscall.SYS_MMAP, base, uintptr(len(img.data)), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_FIXED, uintptr(img.fd), 0)
	return e == 0
}

// revert drops every private page of [0, len(img.data)) of a mapping made
// by mapImage: it reads as the image again.
func revert(b []byte, img *memImage) error {
	return syscall.Madvise(b[:len(img.data)], syscall.MADV_DONTNEED)
}

var pagemap struct {
	once   sync.Once
	f      *os.File
	noScan atomic.Bool // PAGEMAP_SCAN refused: read the entries instead
}

const (
	pagemapScan   = 0xC0606610 // _IOWR('f', 16, struct pm_scan_arg)
	pageIsFile    = 1 << 2
	pageIsPresent = 1 << 3
	pageIsSwapped = 1 << 4
	// /proc/self/pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst)
	pmPresent    = 1 << 63
	pmSwapped    = 1 << 62
	pmFileShared = 1 << 61
)

type pmScanArg struct {
	size, flags, start, end, walkEnd, vec, vecLen, maxPages       uint64
	categoryInverted, categoryMask, categoryAnyofMask, returnMask uint64
}

type pageRegion struct{ start, end, categories uint64 }

// resetWritten sets the pages of an image mapping that are private (were
// written since it was mapped or reverted) back to the image, copying it
// back over them or giving them back (privatePages.settle): the pages its
// last reset kept private when no page fault has been taken in the
// process since (privatePages), or else the pages PAGEMAP_SCAN finds, or
// /proc/self/pagemap where the kernel has no PAGEMAP_SCAN. It says which
// it used ("known", "scan", "pagemap") and how many pages were private;
// "" when none answers: the caller compares the whole image instead.
func resetWritten(lin *mmapMemory) (pages int, how PoolReason) {
	b, img, known := lin.buf, lin.image, &lin.private
	// Every memory, however small, is reset this way: comparing even one
	// wasm page with the image cost a pooled counter.wat call more than
	// asking (3.06-3.22 µs against 2.05-2.32, RATIONALE.md "The reset").
	mode := forceReset
	pagemap.once.Do(func() { pagemap.f, _ = os.Open("/proc/self/pagemap") })
	if pagemap.f == nil || len(b) < len(img.data) || mode == resetCopy {
		return 0, ""
	}
	faults, counted := faultCount()
	if known.valid && counted && faults == known.faults {
		return known.settle(b, img, known.runs), ResetKnown // drops and copies take no fault
	}
	// The private pages before this call are the idle set; those found
	// now go in the other slice (swapped: neither allocates once grown).
	known.idle, known.runs = known.runs, known.idle[:0]
	known.valid = false
	var ok bool
	if mode == resetScan || mode == resetAuto && !pagemap.noScan.Load() {
		var unsupported bool
		pages, ok, unsupported = scanWritten(b, img, known)
		switch {
		case ok:
			how = ResetScan
		case !unsupported || mode == resetScan:
			return 0, ""
		default:
			pagemap.noScan.Store(true)
		}
	}
	if !ok {
		known.runs = known.runs[:0] // what a refused scan may have begun
		if pages, ok = readWritten(b, img, known); !ok {
			return 0, ""
		}
		how = ResetPagemap
	}
	// The private pages are those settle keeps until the next fault.
	known.settle(b, img, known.idle)
	known.valid, known.faults = counted, faults
	return pages, how
}

// scanWritten is resetWritten with PAGEMAP_SCAN; unsupported reports
// that this kernel does not have it. The private runs it found are
// appended to known.
func scanWritten(b []byte, img *memImage, known *privatePages) (pages int, ok, unsupported bool) {
	regions := &known.regions
	base := uint64(uintptr(unsafe.Pointer(&b[0])))
	start, end := base, base+uint64(len(img.data))
	for start < end {
		arg := pmScanArg{
			size: uint64(unsafe.Sizeof(pmScanArg{})), start: start, end: end,
			vec: uint64(uintptr(unsafe.Pointer(&regions[0]))), vecLen: uint64(len(regions)),
			categoryInverted: pageIsFile, categoryMask: pageIsFile,
			categoryAnyofMask: pageIsPresent | pageIsSwapped, returnMask: pageIsPresent | pageIsSwapped,
		}
		n, _, e := syscall.Syscall(syscall.SYS_IOCTL, pagemap.f.Fd(), pagemapScan, uintptr(unsafe.Pointer(&arg)))
		if e != 0 {
			return 0, false, e == syscall.ENOTTY || e == syscall.EINVAL || e == syscall.EOPNOTSUPP
		}
		for _, r := range regions[:n] {
			o, l := r.start-base, r.end-r.start
			pages += int(l / pageSize)
			known.runs = append(known.runs, pageRun{o, l})
		}
		if arg.walkEnd <= start {
			break
		}
		start = arg.walkEnd
	}
	return pages, true, false
}

// readWritten is resetWritten reading /proc/self/pagemap: one 8-byte
// entry per page, 512 pages per read. The private runs it found are
// appended to known.
func readWritten(b []byte, img *memImage, known *privatePages) (pages int, ok bool) {
	var raw [512 * 8]byte
	first := uintptr(unsafe.Pointer(&b[0])) / pageSize
	total := len(img.data) / pageSize
	for p := 0; p < total; {
		n := min(total-p, 512)
		got, err := pagemap.f.ReadAt(raw[:n*8], int64(first+uintptr(p))*8)
		if err != nil || got != n*8 {
			return 0, false
		}
		for i := 0; i < n; {
			if !written(raw[i*8:]) {
				i++
				continue
			}
			j := i + 1
			for j < n && written(raw[j*8:]) {
				j++
			}
			o, e := (p+i)*pageSize, (p+j)*pageSize
			pages += j - i
			known.runs = append(known.runs, pageRun{uint64(o), uint64(e - o)})
			i = j
		}
		p += n
	}
	return pages, true
}

// written reports whether a pagemap entry is of a private page: present
// or swapped, and not the file's (or shared) page.
func written(entry []byte) bool {
	e := binary.NativeEndian.Uint64(entry)
	return e&(pmPresent|pmSwapped) != 0 && e&pmFileShared == 0
}
