package instrument

import (
	"bytes"
	"context"
	"github.com/kindgi/packd/internal/wasmbin"
	"math/rand/v2"
	"testing"

	"github.com/tetratelabs/wazero"
)

// memoryModule is a module with one exported page of memory and the given
// data segments (each already encoded), plus a data count section when
// dataCount.
func memoryModule(segs [][]byte, dataCount bool) []byte {
	out := append([]byte(nil), "\x00asm\x01\x00\x00\x00"...)
	out = appendSection(out, secMemory, []byte{1, 0, 1})
	out = appendSection(out, secExport, append(wasmbin.AppendName([]byte{1}, "mem"), 2, 0))
	if dataCount {
		out = appendSection(out, secDataCount, wasmbin.AppendU32(nil, uint32(len(segs))))
	}
	body := wasmbin.AppendU32(nil, uint32(len(segs)))
	for _, s := range segs {
		body = append(body, s...)
	}
	return appendSection(out, secData, body)
}

func active(offset int32, init []byte) []byte {
	b := wasmbin.AppendS64([]byte{0, 0x41}, int64(offset))
	return append(wasmbin.AppendU32(append(b, 0x0b), uint32(len(init))), init...)
}

// memoryAfter instantiates wasm and returns its memory, or nil when
// instantiation fails.
func memoryAfter(t *testing.T, wasm []byte) []byte {
	t.Helper()
	refills := 0
	ctx, rt := runtimeWithHosts(t, &refills)
	c, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	m, err := rt.InstantiateModule(ctx, c, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return nil
	}
	defer m.Close(context.Background())
	b, _ := m.Memory().Read(0, m.Memory().Size())
	return append([]byte(nil), b...)
}

// dataSegments is how many segments the module's data section holds.
func dataSegments(t *testing.T, wasm []byte) int {
	t.Helper()
	n := -1
	withSection(t, wasm, secData, func(b []byte) []byte {
		n = int((&reader{wasmbin.Reader{B: b}}).U32())
		return b
	})
	return n
}

// TestCloseDataSegmentsAreMerged: Go's linker writes a pack's data as tens
// of thousands of segments split at runs of zeros, and wazero keeps a
// record per segment in every instance. The pass merges them into runs,
// and the memory an instance starts with is the same byte for byte.
func TestCloseDataSegmentsAreMerged(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var segs [][]byte
	at := int32(16)
	for i := 0; i < 400; i++ {
		init := make([]byte, 1+rng.IntN(12))
		for j := range init {
			init[j] = byte(1 + rng.IntN(255))
		}
		if i%2 == 1 {
			segs = append(segs, append([]byte{2, 0, 0x41}, append(wasmbin.AppendS64(nil, int64(at)), append(wasmbin.AppendU32([]byte{0x0b}, uint32(len(init))), init...)...)...)) // flags 2, memory 0
		} else {
			segs = append(segs, active(at, init))
		}
		at += int32(len(init))
		switch i {
		case 100:
			at += mergeGap // the widest gap merged
		case 199:
			at += mergeGap + 1 // the narrowest gap not merged
		default:
			at += int32(rng.IntN(8))
		}
	}
	rng.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] }) // any order
	wasm := memoryModule(segs, false)
	metered, err := Instrument(wasm, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := dataSegments(t, metered); n != 2 {
		t.Fatalf("%d segments after the pass, want the 2 runs", n)
	}
	want, got := memoryAfter(t, wasm), memoryAfter(t, metered)
	if want == nil || !bytes.Equal(want, got) {
		t.Fatal("the merged segments do not write the memory the originals do")
	}
}

// TestDataSegmentsKeptWhereMergingIsNotExact: segments that overlap (the
// later wins), a passive segment or a data count section (memory.init and
// data.drop name segments by index) leave the section as written, and a
// segment out of bounds still fails instantiation.
func TestDataSegmentsKeptWhereMergingIsNotExact(t *testing.T) {
	a, b := []byte("aaaa"), []byte("bb")
	cases := map[string]struct {
		segs      [][]byte
		dataCount bool
		fails     bool
	}{
		"overlapping":       {segs: [][]byte{active(8, a), active(10, b), active(40, b)}},
		"passive":           {segs: [][]byte{active(8, a), append(wasmbin.AppendU32([]byte{1}, 2), b...), active(14, b)}},
		"data count":        {segs: [][]byte{active(8, a), active(14, b)}, dataCount: true},
		"out of bounds":     {segs: [][]byte{active(8, a), active(65535, b)}, fails: true},
		"negative offset":   {segs: [][]byte{active(8, a), active(-2, b)}, fails: true},
		"global offset":     {segs: [][]byte{active(8, a), {0, 0x23, 0, 0x0b, 1, 'x'}}, fails: true}, // no global 0: invalid
		"merged, in bounds": {segs: [][]byte{active(8, a), active(65534, b)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wasm := memoryModule(tc.segs, tc.dataCount)
			metered, err := Instrument(wasm, Options{})
			if err != nil {
				if name == "global offset" {
					return // refused by the pass: fine
				}
				t.Fatal(err)
			}
			if name != "merged, in bounds" {
				var orig, now []byte
				withSection(t, wasm, secData, func(b []byte) []byte { orig = b; return b })
				withSection(t, metered, secData, func(b []byte) []byte { now = b; return b })
				if !bytes.Equal(orig, now) {
					t.Fatal("the pass changed the data section")
				}
			}
			want, got := memoryAfter(t, wasm), memoryAfter(t, metered)
			if (want == nil) != tc.fails || (got == nil) != tc.fails || !bytes.Equal(want, got) {
				t.Fatalf("instantiation: original ok %v, after the pass ok %v, same memory %v; want ok %v",
					want != nil, got != nil, bytes.Equal(want, got), !tc.fails)
			}
		})
	}
}

// ConstI32 reads the offset of an active segment, i32.const N end, and
// nothing else: what the sandbox writes data at once it takes the data out
// of wazero's module.
func TestConstI32(t *testing.T) {
	for _, c := range []struct {
		expr []byte
		want uint32
		ok   bool
	}{
		{[]byte{0x41, 0xc0, 0x80, 0x04, 0x0b}, 65600, true},
		{[]byte{0x41, 0x7f, 0x0b}, 0xffffffff, true}, // -1: an offset of 4 GiB - 1
		{[]byte{0x41, 0x00, 0x0b}, 0, true},
		{[]byte{0x23, 0x00, 0x0b}, 0, false},                         // global.get
		{[]byte{0x41, 0x00, 0x41, 0x00, 0x6a, 0x0b}, 0, false},       // extended const
		{[]byte{0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x0b}, 0, false}, // six bytes
		{[]byte{0x41, 0x00}, 0, false},                               // no end
	} {
		if got, ok := ConstI32(c.expr); got != c.want || ok != c.ok {
			t.Errorf("ConstI32(% x) = %d %v, want %d %v", c.expr, got, ok, c.want, c.ok)
		}
	}
}
