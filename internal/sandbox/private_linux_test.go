package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// privateSet is the pages of an image mapping that are private now, as
// /proc/self/pagemap tells.
func privateSet(t *testing.T, b []byte, img *memImage) []int {
	t.Helper()
	var found privatePages
	if _, ok := readWritten(b, img, &found); !ok {
		t.Fatal("cannot read /proc/self/pagemap")
	}
	var pages []int
	for _, r := range found.runs {
		for p := r.off; p < r.off+r.len; p += pageSize {
			pages = append(pages, int(p/pageSize))
		}
	}
	return pages
}

// imageMapping maps an image of n pages of non-zero bytes, and returns the
// instance memory over it and the function that unmaps it.
func imageMapping(t *testing.T, n int) (*mmapMemory, []byte, func()) {
	t.Helper()
	data := make([]byte, n*pageSize)
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	img := newMemImage(data)
	if img == nil {
		t.Fatal("no memfd image")
	}
	b := mapImage(img, len(data))
	if b == nil {
		t.Fatal("no mapping of the image")
	}
	return &mmapMemory{buf: b, image: img}, data, func() { _ = syscall.Munmap(b); img.close() }
}

// resetsOf resets lin after write has written its pages, and checks that
// the memory reads as the image again.
func resetsOf(t *testing.T, lin *mmapMemory, data []byte, pages ...int) {
	t.Helper()
	for _, p := range pages {
		lin.buf[p*pageSize+p%pageSize]++
	}
	if _, how := resetWritten(lin); how == "" {
		t.Fatal("the kernel did not say which pages were written")
	}
	if !bytes.Equal(lin.buf[:len(data)], data) {
		t.Fatal("the memory differs from the image after a reset")
	}
}

func pageRange(from, to int) []int {
	var p []int
	for i := from; i < to; i++ {
		p = append(p, i)
	}
	return p
}

// TestAResetKeepsWhatTheCallsBeforeABigOneWrote: when a call writes more
// new pages than giveBackFrom and its reset gives them back, the pages the
// calls before it wrote stay private, so the next call (which most likely
// writes them again) does not fault them in again and its reset need not
// scan. On main the reset gave back every private page.
func TestAResetKeepsWhatTheCallsBeforeABigOneWrote(t *testing.T) {
	for _, mode := range []int{resetScan, resetPagemap} {
		forceReset = mode
		lin, data, unmap := imageMapping(t, 1024)
		resetsOf(t, lin, data, 3, 4)
		resetsOf(t, lin, data, 3, 4)
		resetsOf(t, lin, data, append([]int{3, 4}, pageRange(100, 100+2*giveBackFrom)...)...)
		if got := privateSet(t, lin.buf, lin.image); !slices.Equal(got, []int{3, 4}) {
			t.Errorf("mode %d: private after the big call's reset: %v, want the small calls' pages [3 4]", mode, got)
		}
		unmap()
	}
	forceReset = resetAuto
}

// TestAResetGivesBackWhatTheCallsLeaveAlone: pages a call wrote and kept
// private (too few to give back at once) are given back within lookEvery
// resets once the calls stop writing them, so an instance's private memory
// and the cost of its resets come back to what its calls write. On main
// they stayed private, copied back at every reset, until the instance was
// retired.
func TestAResetGivesBackWhatTheCallsLeaveAlone(t *testing.T) {
	for _, mode := range []int{resetScan, resetPagemap} {
		forceReset = mode
		lin, data, unmap := imageMapping(t, 1024)
		resetsOf(t, lin, data, 3)
		resetsOf(t, lin, data, append([]int{3}, pageRange(100, 100+giveBackFrom-1)...)...)
		if got := privateSet(t, lin.buf, lin.image); len(got) != giveBackFrom {
			t.Fatalf("mode %d: %d private pages after a call of %d, want them kept", mode, len(got), giveBackFrom)
		}
		for i := 0; i < lookEvery; i++ {
			resetsOf(t, lin, data, 3)
		}
		if got := privateSet(t, lin.buf, lin.image); !slices.Equal(got, []int{3}) {
			t.Errorf("mode %d: private after %d calls that wrote page 3: %v, want [3]", mode, lookEvery, got)
		}
		unmap()
	}
	forceReset = resetAuto
}

// TestAResetKeepsWhatEveryCallWrites: calls that each write the same few
// MiB (more new pages than giveBackFrom) have them given back once, then
// kept: the second call wrote what the first did, so the third will too,
// and copying them back beats faulting them all in again at every call.
// Past keepHot they are given back every time. On main every such call
// faulted all its pages in again (a C echo of a 1 MiB input: 10 ms pooled
// beside 0.6 ms on a fresh instance).
func TestAResetKeepsWhatEveryCallWrites(t *testing.T) {
	for _, mode := range []int{resetScan, resetPagemap} {
		forceReset = mode
		lin, data, unmap := imageMapping(t, keepHot+200)
		big := pageRange(100, 100+3*giveBackFrom)
		resetsOf(t, lin, data, 3)
		resetsOf(t, lin, data, big...)
		if got := privateSet(t, lin.buf, lin.image); !slices.Equal(got, []int{3}) {
			t.Fatalf("mode %d: private after the first big call: %v, want [3]", mode, got)
		}
		resetsOf(t, lin, data, big...)
		if got := privateSet(t, lin.buf, lin.image); len(got) != len(big)+1 {
			t.Errorf("mode %d: %d pages private after the second big call, want its %d and page 3", mode, len(got), len(big))
		}
		unmap()
		lin, data, unmap = imageMapping(t, keepHot+200)
		huge := pageRange(100, 100+keepHot+1)
		resetsOf(t, lin, data, 3)
		resetsOf(t, lin, data, huge...)
		resetsOf(t, lin, data, huge...)
		if got := privateSet(t, lin.buf, lin.image); !slices.Equal(got, []int{3}) {
			t.Errorf("mode %d: %d pages private after two calls of %d, past keepHot; want [3]", mode, len(got), len(huge))
		}
		unmap()
	}
	forceReset = resetAuto
}

// TestASmallMemoryIsResetFromTheWrittenPages: a memory of one wasm page
// (16 pages of 4 KiB) is reset from the pages its call wrote, as a large
// one is, not compared with its image byte for byte. On main a memory
// under 1 MiB was always compared, which cost a pooled call more than
// asking (RATIONALE.md, "The reset").
func TestASmallMemoryIsResetFromTheWrittenPages(t *testing.T) {
	forceReset = resetAuto
	lin, data, unmap := imageMapping(t, 16)
	defer unmap()
	resetsOf(t, lin, data, 3)
	resetsOf(t, lin, data, 3, 7)
}

// TestAResetAllocatesNothing: a reset that asks the kernel which pages
// were written allocates nothing once its slices have grown, however
// often a fault elsewhere in the process makes it ask again. On main each
// scan put its 1.5 KB array of regions on the heap.
func TestAResetAllocatesNothing(t *testing.T) {
	for _, mode := range []int{resetAuto, resetPagemap} {
		forceReset = mode
		lin, data, unmap := imageMapping(t, 512)
		resetsOf(t, lin, data, 3, 9)
		allocs := testing.AllocsPerRun(50, func() {
			lin.buf[3*pageSize]++
			lin.buf[9*pageSize]++
			lin.private.valid = false // as after a fault elsewhere
			if _, how := resetWritten(lin); how != ResetScan && how != ResetPagemap {
				t.Fatalf("mode %d: reset by %q, want a scan or a read of pagemap", mode, how)
			}
		})
		// Under the race detector the pagemap read's buffer escapes (its
		// instrumented ReadAt); the scan allocates nothing in either build.
		if allocs != 0 && !(raceBuild && mode == resetPagemap) {
			t.Errorf("mode %d: %.1f allocations a reset, want 0", mode, allocs)
		}
		if !bytes.Equal(lin.buf[:len(data)], data) {
			t.Errorf("mode %d: the memory differs from the image after the resets", mode)
		}
		unmap()
	}
	forceReset = resetAuto
}

// TestTheSnapshotsBytesAreTheSealedMemfd: a snapshot image's bytes are the
// memfd itself, mapped read-only: equal to what it was made from, not a
// copy on the Go heap, and the mapping cannot be made writable (the
// memfd's write seal), so nothing in the process can change what every
// reset copies back.
func TestTheSnapshotsBytesAreTheSealedMemfd(t *testing.T) {
	lin, data, unmap := imageMapping(t, 64)
	defer unmap()
	img := lin.image
	if !bytes.Equal(img.data, data) {
		t.Fatal("the image's bytes differ from what it was made from")
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	at, mapped := uint64(uintptr(unsafe.Pointer(&img.data[0]))), ""
	for _, line := range strings.Split(string(maps), "\n") {
		var lo, hi uint64
		if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err == nil && lo <= at && at < hi {
			mapped = line
		}
	}
	if !strings.Contains(mapped, "memfd:packd-snapshot") {
		t.Fatalf("the image's bytes are in %q, not the memfd", mapped)
	}
	if err := syscall.Mprotect(img.data, syscall.PROT_READ|syscall.PROT_WRITE); err == nil {
		t.Fatal("the image's mapping was made writable")
	}
}
