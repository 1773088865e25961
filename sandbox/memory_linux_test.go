package sandbox

import (
	"testing"
	"time"
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
