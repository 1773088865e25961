package instrument

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

func TestPrescanBoundsDeclaredCounts(t *testing.T) {
	head := "\x00asm\x01\x00\x00\x00"
	cases := map[string]string{
		"100M imports in 8 bytes": head + "\x02\x06\xc7\xc7\xc7\x30\x00\x00",
		"4 GiB data segment":      head + "\x0b\x08\x01\x01\xff\xff\xff\xff\x0f\x00",
		"section past the end":    head + "\x01\x7f\x00",
		"too many locals":         head + "\x0a\x09\x01\x07\x01\xff\xff\xff\xff\x0f\x7f",
		"huge table":              head + "\x04\x07\x01\x70\x00\xff\xff\xff\x0f",
	}
	for name, bin := range cases {
		if err := Prescan([]byte(bin)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := Prescan([]byte(head)); err != nil {
		t.Errorf("empty module: %v", err)
	}
}

// TestInstantiationCostIsBounded: a module may declare at most MaxGlobals
// globals and MaxElementSegments and MaxDataSegments segments, which its
// instantiation sets up before fuel or the deadline can stop it (on main a
// million globals were accepted and took 0.2–1.5 s to instantiate).
func TestInstantiationCostIsBounded(t *testing.T) {
	head := []byte("\x00asm\x01\x00\x00\x00")
	global := []byte{0x7f, 0x00, 0x41, 0x00, 0x0b} // i32, const, i32.const 0
	element := []byte{0x01, 0x00, 0x00}            // passive, funcref, no functions
	data := []byte{0x01, 0x00}                     // passive, no bytes
	for _, c := range []struct {
		id    byte
		max   int
		entry []byte
		what  string
	}{{6, MaxGlobals, global, "globals"}, {9, MaxElementSegments, element, "element segments"}, {11, MaxDataSegments, data, "data segments"}} {
		if err := Prescan(append(head, repeatedSection(c.id, c.max, c.entry)...)); err != nil {
			t.Errorf("%d %s: %v", c.max, c.what, err)
		}
		err := Prescan(append(head, repeatedSection(c.id, c.max+1, c.entry)...))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), fmt.Sprintf("%d %s, over the limit of %d", c.max+1, c.what, c.max)) {
			t.Errorf("%d %s: %v", c.max+1, c.what, err)
		}
	}
}

// BenchmarkInstantiateAtTheBounds: what instantiating a module with
// MaxGlobals globals, MaxElementSegments and MaxDataSegments segments costs,
// the part of a call that neither fuel nor the deadline can stop (part of
// make bench):
//
//	go test -run '^$' -bench InstantiateAtTheBounds ./sandbox/internal/instrument
func BenchmarkInstantiateAtTheBounds(b *testing.B) {
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	wasm = append(wasm, repeatedSection(6, MaxGlobals, []byte{0x7f, 0x01, 0x41, 0x00, 0x0b})...) // mutable i32 globals
	wasm = append(wasm, repeatedSection(9, MaxElementSegments, []byte{0x01, 0x00, 0x00})...)     // passive, funcref, empty
	wasm = append(wasm, repeatedSection(11, MaxDataSegments, []byte{0x01, 0x01, 0x2a})...)       // passive, one byte
	if err := Prescan(wasm); err != nil {
		b.Fatal(err)
	}
	metered, err := Instrument(wasm, Options{})
	if err != nil {
		b.Fatal(err)
	}
	refills := 0
	ctx, rt := runtimeWithHosts(b, &refills)
	c, err := rt.CompileModule(ctx, metered)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		m, err := rt.InstantiateModule(ctx, c, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			b.Fatal(err)
		}
		_ = m.Close(ctx)
	}
}

// repeatedSection is a section of id holding n copies of entry.
func repeatedSection(id byte, n int, entry []byte) []byte {
	body := binary.AppendUvarint(nil, uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, entry...)
	}
	return append(append([]byte{id}, binary.AppendUvarint(nil, uint64(len(body)))...), body...)
}
