package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestPooledMappingsComeBackZeroed: a mapping reused for another instance
// reads as zeros everywhere its last guest could write, below keepWarm
// (cleared) and above it (returned to the system).
func TestPooledMappingsComeBackZeroed(t *testing.T) {
	p := newMappings()
	defer p.close()
	const length = 32 << 20
	b := p.get(length)
	if b == nil {
		t.Fatal("no mapping")
	}
	used := 20 << 20
	for _, at := range []int{0, 4096, keepWarm - 1, keepWarm, keepWarm + 12345, used - 1} {
		b[at] = 0xaa
	}
	p.put(b, used)
	c := p.get(length)
	if &c[0] != &b[0] {
		t.Fatal("the mapping was not reused")
	}
	for i, v := range c[:used] {
		if v != 0 {
			t.Fatalf("byte %d of a reused mapping is %#x", i, v)
		}
	}
	p.put(c, used)
	p.trim(time.Now().Add(time.Second)) // as the janitor does once it idled
	if p.n != 0 {
		t.Fatalf("%d mappings left after trimming", p.n)
	}
}

func TestMemoryBudget(t *testing.T) {
	b := &memBudget{limit: 100}
	c := &callMemory{budget: b}
	if !c.take(60) || c.take(50) || !c.take(40) || b.used.Load() != 100 {
		t.Fatalf("used %d", b.used.Load())
	}
	b.give(100)
	if !b.take(30) {
		t.Fatal("the budget did not come back")
	}
}

// TestAResetTrustsItsLastScanOnlyUntilAPageFaults: after a scan, a reset
// copies back the pages that scan found private without asking the kernel
// again, as long as the process has taken no page fault since; a write to
// any other page of the mapping, by the guest between two resets or by
// anyone while the instance is idle, is a fault, and the next reset scans
// again. Every reset leaves the memory equal to the image.
func TestAResetTrustsItsLastScanOnlyUntilAPageFaults(t *testing.T) {
	for _, mode := range []int{resetScan, resetPagemap} {
		forceReset = mode
		lin, data, unmap := imageMapping(t, 512)
		b := lin.buf
		reset := func(what string) string {
			t.Helper()
			_, how := resetWritten(lin)
			if how == "" {
				t.Fatalf("mode %d, %s: the kernel did not say which pages were written", mode, what)
			}
			if !bytes.Equal(b[:len(data)], data) {
				t.Fatalf("mode %d, %s: the memory differs from the image after a %s reset", mode, what, how)
			}
			return string(how)
		}
		b[3*pageSize+5]++
		if how := reset("first write"); how == "known" {
			t.Fatalf("mode %d: the first reset trusted a scan it never made", mode)
		}
		known := 0
		for i := 0; i < 20; i++ {
			b[3*pageSize+5]++ // the same page: private already, no fault
			if reset("the same page again") == "known" {
				known++
			}
		}
		// (Under the race detector, reading /proc/self/pagemap faults:
		// raceBuild.)
		if known == 0 && (mode == resetScan || !raceBuild) {
			t.Fatalf("mode %d: 20 resets after writes to a page the last scan found all scanned again", mode)
		}
		for _, page := range []int{100, 511, 0} { // pages never written before
			b[page*pageSize+9]++
			if how := reset("a new page"); how == "known" {
				t.Fatalf("mode %d: a write to page %d (a fault) went unseen: the reset trusted the last scan", mode, page)
			}
		}
		// Idle: written between two resets, with no call in between.
		reset("idle, before")
		b[200*pageSize]++
		if how := reset("a page written while idle"); how == "known" {
			t.Fatalf("mode %d: a write to an idle instance went unseen", mode)
		}
		unmap()
	}
	forceReset = resetAuto
}

// A big grow is faulted in in huge pages where the kernel gives them, and
// a mapping that has them is unmapped when freed, not pooled for another
// instance (which would get huge pages on first touch too).
func TestABigGrowIsFaultedInInHugePages(t *testing.T) {
	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Fatalf("this kernel has no transparent huge pages to test with: %v", err)
	}
	p := newMappings()
	defer p.close()
	c := &callMemory{budget: &memBudget{limit: 1 << 30}, maps: p}
	m := c.Allocate(0, 64<<20).(*mmapMemory)
	m.Reallocate(64 << 10)
	if m.Reallocate(32<<20) == nil {
		t.Fatal("the grow failed")
	}
	huge := anonHugeBytes(t, uintptr(unsafe.Pointer(&m.buf[16<<20])))
	if !strings.Contains(string(thp), "[never]") && huge == 0 {
		t.Fatalf("no huge pages in a 32 MiB grow (transparent huge pages: %s)", strings.TrimSpace(string(thp)))
	}
	for i := 64 << 10; i < 32<<20; i += 4096 {
		if m.buf[i] != 0 {
			t.Fatalf("byte %d of grown memory is %#x", i, m.buf[i])
		}
	}
	m.Free()
	if p.n != 0 {
		t.Fatal("a mapping with huge pages was pooled")
	}
}

// anonHugeBytes reads /proc/self/smaps: the AnonHugePages of the mapping
// holding addr.
func anonHugeBytes(t *testing.T, addr uintptr) int64 {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			var lo, hi uintptr
			_, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi)
			in = err == nil && lo <= addr && addr < hi
			continue
		}
		if in && len(f) >= 2 && f[0] == "AnonHugePages:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}
