package instrument

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/kindgi/packd/internal/wasmbin"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// runtimeWithHosts provides env.twice and a kindgi.fuel_refill that counts
// its calls and hands out slices of 1000 (as many as the counter needs)
// until the context is done.
func runtimeWithHosts(t testing.TB, refills *int) (context.Context, wazero.Runtime) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithMemoryLimitPages(64))
	t.Cleanup(func() { _ = rt.Close(ctx) })
	_, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(x int32) int32 { return 2 * x }).Export("twice").Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.NewHostModuleBuilder(ImportModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, _ []uint64) {
			if ctx.Err() != nil {
				panic(ctx.Err())
			}
			*refills++
			g := m.ExportedGlobal(GlobalExport).(api.MutableGlobal)
			if v := int64(g.Get()); v < 0 {
				g.Set(uint64(v + (-v/1000+1)*1000)) // whole slices of 1000
			}
		}), nil, nil).Export(ImportRefill).Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, rt
}

func TestInstrumentedModuleBehavesTheSame(t *testing.T) {
	wasm, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "instrument", "renum.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	metered, err := Instrument(wasm, Options{})
	if err != nil {
		t.Fatal(err)
	}
	refills := 0
	ctx, rt := runtimeWithHosts(t, &refills)
	orig, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName("orig"))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := rt.InstantiateWithConfig(ctx, metered, wazero.NewModuleConfig().WithName("metered"))
	if err != nil {
		t.Fatalf("the instrumented module does not instantiate: %v", err)
	}
	want := map[string]uint64{"run": 151, "viaref": 100, "bulk": 9}
	for name, res := range want {
		a, errA := orig.ExportedFunction(name).Call(ctx)
		b, errB := inst.ExportedFunction(name).Call(ctx)
		if errA != nil || errB != nil || a[0] != res || b[0] != res {
			t.Errorf("%s: original %v %v, instrumented %v %v, want %d", name, a, errA, b, errB, res)
		}
	}
	for _, x := range []uint64{0, 1} {
		a, _ := orig.ExportedFunction("early").Call(ctx, x)
		b, _ := inst.ExportedFunction("early").Call(ctx, x)
		if a[0] != b[0] {
			t.Errorf("early(%d): %v vs %v", x, a, b)
		}
	}
	if refills == 0 {
		t.Error("the fuel refill was never called")
	}
	fuel := inst.ExportedGlobal(GlobalExport)
	if fuel == nil || fuel.Type() != api.ValueTypeI64 {
		t.Fatal("no i64 fuel global exported")
	}
	// Names follow their functions.
	if got := inst.ExportedFunction("bulk").Definition().Name(); got != "bulk" {
		t.Errorf("the export bulk is named %q after instrumentation", got)
	}
	// bulk charges its lengths: 1000>>3 twice and one page of growth, so a
	// zeroed counter needs several refills of 1000.
	before := refills
	inst.ExportedGlobal(GlobalExport).(api.MutableGlobal).Set(0)
	if _, err := inst.ExportedFunction("bulk").Call(ctx); err != nil {
		t.Fatal(err)
	}
	if refills-before < 2 {
		t.Errorf("bulk operations were not charged (%d refills)", refills-before)
	}
}

func TestInstrumentRefuses(t *testing.T) {
	head := "\x00asm\x01\x00\x00\x00"
	cases := map[string]string{
		"not wasm":                           "hello",
		"unknown opcode":                     head + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x05\x01\x03\x00\xff\x0b",
		"truncated body":                     head + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x04\x01\x05\x00\x01",
		"already has fuel":                   head + "\x07\x0f\x01\x0bkindgi_fuel\x03\x00",
		"export of global 0 without globals": head + "\x07\x05\x01\x01g\x03\x00",
		"function index 0xffffffff":          head + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x07\x09\x01\x01f\x00\xff\xff\xff\xff\x0f\x0a\x04\x01\x02\x00\x0b",
		"block type past the types":          head + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x08\x01\x06\x00\x02\x01\x0b\x0b\x0b",
		"label past the frames":              head + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x06\x01\x04\x00\x0c\x01\x0b",
		"sections out of order":              head + "\x03\x02\x01\x00\x01\x04\x01\x60\x00\x00",
	}
	for name, bin := range cases {
		if _, err := Instrument([]byte(bin), Options{}); !errors.Is(err, ErrInstrument) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// FuzzInstrument is differential both ways. If the pass's output compiles,
// the input compiles too: nothing invalid as written becomes valid by what
// the pass adds. For any module wazero accepts, the pass accepts it (unless
// it is over a limit of the pass) and the instrumented module compiles and
// gives the same results for its exported functions without parameters.
// With -fuzz it is also seeded with the spec testsuite's modules.
func FuzzInstrument(f *testing.F) {
	globs := []string{"hostile/*.wasm", "bench/*.wasm", "instrument/*.wasm"}
	var seeds []string
	for _, glob := range globs {
		paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "..", "testdata", glob))
		seeds = append(seeds, paths...)
	}
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() != "" {
		if out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/tetratelabs/wazero").Output(); err == nil {
			spec, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "internal", "integration_test", "spectest", "v2", "testdata", "*.wasm"))
			seeds = append(seeds, spec...)
		}
	}
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	refills := 0
	ctx, rt := runtimeWithHosts(f, &refills)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		if len(wasm) > 1<<16 || Prescan(wasm) != nil {
			return
		}
		metered, ierr := Instrument(wasm, Options{MaxTableElements: 1 << 16})
		orig, err := compileRecovering(ctx, rt, wasm)
		if err != nil {
			if ierr == nil {
				if inst, err := rt.CompileModule(ctx, metered); err == nil {
					_ = inst.Close(ctx)
					t.Fatal("wazero refuses the module, and accepts what the pass made of it")
				}
			}
			return
		}
		defer orig.Close(ctx)
		if errors.Is(ierr, ErrLimit) || errors.Is(ierr, errStrict) {
			return
		}
		if ierr != nil {
			t.Fatalf("wazero accepts the module, the pass does not: %v", ierr)
		}
		inst, err := rt.CompileModule(ctx, metered)
		if err != nil {
			t.Fatalf("the instrumented module does not compile: %v", err)
		}
		defer inst.Close(ctx)
		for _, imp := range orig.ImportedFunctions() {
			if mod, _, _ := imp.Import(); mod != "env" {
				return // needs hosts this test does not have
			}
		}
		a, b := runExports(ctx, rt, orig), runExports(ctx, rt, inst)
		if a == nil || b == nil {
			return
		}
		for k, v := range a {
			if b[k] != v {
				t.Fatalf("%s: original %s, instrumented %s", k, v, b[k])
			}
		}
	})
}

// compileRecovering compiles, turning a panic of wazero's into an error:
// wazero's validator indexes the type section with a function's declared
// type before checking it (found by this fuzzer); the pass refuses such a
// module before wazero sees it.
func compileRecovering(ctx context.Context, rt wazero.Runtime, wasm []byte) (c wazero.CompiledModule, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("wazero panicked: %v", r)
		}
	}()
	return rt.CompileModule(ctx, wasm)
}

// withSection returns wasm with the body of its first section of that id
// changed by edit.
func withSection(t *testing.T, wasm []byte, id byte, edit func([]byte) []byte) []byte {
	t.Helper()
	r := &reader{wasmbin.Reader{B: wasm, Off: 8}}
	out := append([]byte(nil), wasm[:8]...)
	found := false
	for !r.Done() {
		sid := r.Byte()
		body := r.Bytes(int(r.U32()))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if sid == id && !found {
			body, found = edit(append([]byte(nil), body...)), true
		}
		out = appendSection(out, sid, body)
	}
	if !found {
		t.Fatalf("no section %d", id)
	}
	return out
}

func readFixture(t *testing.T, dir, name string) []byte {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", dir, name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// TestTrailingBytesAreRefused: a section the pass rewrites is read to its
// exact end; on main the rewrite dropped what followed the last entry, so
// a malformed module came out well-formed.
func TestTrailingBytesAreRefused(t *testing.T) {
	wasm := readFixture(t, "instrument", "renum")
	if _, err := Instrument(wasm, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []byte{secType, secImport, secFunction, secGlobal, secExport, secStart, secElement, secCode, secData} {
		from := wasm
		if id == secData {
			from = readFixture(t, "hostile", "loop")
		}
		bad := withSection(t, from, id, func(b []byte) []byte { return append(b, 0x00) })
		if _, err := Instrument(bad, Options{}); !errors.Is(err, ErrInstrument) {
			t.Errorf("section %d with a trailing byte: %v", id, err)
		}
	}
	// A function body with a byte after its last end.
	bad := withSection(t, readFixture(t, "hostile", "loop"), secCode, func(b []byte) []byte {
		r := &reader{wasmbin.Reader{B: b}}
		n := r.U32()
		out := wasmbin.AppendU32(nil, n)
		for i := uint32(0); i < n; i++ {
			fb := append(r.Bytes(int(r.U32())), 0x01)
			out = append(wasmbin.AppendU32(out, uint32(len(fb))), fb...)
		}
		return out
	})
	if _, err := Instrument(bad, Options{}); !errors.Is(err, ErrInstrument) {
		t.Errorf("a body with a trailing nop: %v", err)
	}
}

// sectionIDs lists a module's section ids in order, custom ones as 0.
func sectionIDs(t *testing.T, wasm []byte) []byte {
	t.Helper()
	r := &reader{wasmbin.Reader{B: wasm, Off: 8}}
	var ids []byte
	for !r.Done() {
		ids = append(ids, r.Byte())
		r.Bytes(int(r.U32()))
	}
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	return ids
}

// TestAddedSectionsPrecedeATrailingNameSection: on main the sections the
// pass adds were appended after the name section, which wasm-validate
// refuses.
func TestAddedSectionsPrecedeATrailingNameSection(t *testing.T) {
	out, err := Instrument(readFixture(t, "hostile", "namelast"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := sectionIDs(t, out)
	if ids[len(ids)-1] != secCustom {
		t.Fatalf("sections %v: the name section is not last", ids)
	}
	validate, err := exec.LookPath("wasm-validate")
	if err != nil {
		t.Fatal("wasm-validate is not installed: scripts/deps installs it (Debian: apt-get install wabt)")
	}
	f := filepath.Join(t.TempDir(), "out.wasm")
	if err := os.WriteFile(f, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(validate, f).CombinedOutput(); err != nil {
		t.Fatalf("wasm-validate: %s", msg)
	}
}

// TestTablesAreClamped: every defined table gets a maximum within the
// limit, shared between tables; tables whose minimums exceed it are refused.
func TestTablesAreClamped(t *testing.T) {
	head := "\x00asm\x01\x00\x00\x00"
	tables := func(entries ...string) []byte {
		body := wasmbin.AppendU32(nil, uint32(len(entries)))
		for _, e := range entries {
			body = append(body, e...)
		}
		return appendSection([]byte(head), secTable, body)
	}
	limits := func(wasm []byte) [][2]uint32 {
		var got [][2]uint32
		for _, s := range func() []section { m := &module{}; _ = m.parse(wasm); return m.sections }() {
			if s.id == secTable {
				r := &reader{wasmbin.Reader{B: s.body}}
				for n := r.U32(); n > 0; n-- {
					r.Byte()
					if r.Byte() != 1 {
						t.Fatal("a table without a maximum")
					}
					got = append(got, [2]uint32{r.U32(), r.U32()})
				}
			}
		}
		return got
	}
	// funcref, no max, min 10; externref, max 20, min 0
	out, err := Instrument(tables("\x70\x00\x0a", "\x6f\x01\x00\x14"), Options{MaxTableElements: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got := limits(out); got[0] != [2]uint32{10, 505} || got[1] != [2]uint32{0, 20} {
		t.Errorf("clamped to %v", got)
	}
	// A declared max of 0xffffffff.
	out, err = Instrument(tables("\x70\x01\x01\xff\xff\xff\xff\x0f"), Options{MaxTableElements: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got := limits(out); got[0] != [2]uint32{1, 1000} {
		t.Errorf("clamped to %v", got)
	}
	if _, err := Instrument(tables("\x70\x00\xe9\x07"), Options{MaxTableElements: 1000}); !errors.Is(err, ErrLimit) {
		t.Errorf("a table of 1001 elements under a limit of 1000: %v", err)
	}
}

// runExports calls every exported function without parameters, in name
// order, and says what each returned; nil when time ran out.
func runExports(ctx context.Context, rt wazero.Runtime, c wazero.CompiledModule) map[string]string {
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	out := map[string]string{}
	m, err := rt.InstantiateModule(cctx, c, wazero.NewModuleConfig().WithName(""))
	if cctx.Err() != nil {
		return nil
	}
	if err != nil {
		out[""] = "instantiate failed"
		return out
	}
	defer m.Close(ctx)
	defs := c.ExportedFunctions()
	names := make([]string, 0, len(defs))
	for name := range defs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if len(defs[name].ParamTypes()) > 0 {
			continue
		}
		res, err := m.ExportedFunction(name).Call(cctx)
		if cctx.Err() != nil {
			return nil
		}
		if err != nil {
			out[name] = "error"
			continue
		}
		var vs []string
		for _, v := range res {
			vs = append(vs, strconv.FormatUint(v, 10))
		}
		out[name] = strings.Join(vs, ",")
	}
	return out
}

// TestMutableGlobalsAreExported: every mutable global of the module is
// exported as GlobalPrefix+index (what a snapshot of an instance reads and
// a reset sets), and the pass says when tables or segments can change.
func TestMutableGlobalsAreExported(t *testing.T) {
	for _, c := range []struct {
		dir, name string
		globals   []uint32
		writes    bool
	}{
		{"instrument", "renum", []uint32{0, 1}, true}, // $fref, $started; table.set
		{"hostile", "counter", []uint32{0}, false},
	} {
		out, info, err := InstrumentInfo(readFixture(t, c.dir, c.name), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(info.Globals) != fmt.Sprint(c.globals) || info.WritesTablesOrSegments != c.writes {
			t.Errorf("%s: %+v", c.name, info)
		}
		exported := map[string]uint32{}
		sr := &reader{wasmbin.Reader{B: out, Off: 8}}
		for !sr.Done() {
			id, body := sr.Byte(), sr.Bytes(int(sr.U32()))
			if id != secExport {
				continue
			}
			r := &reader{wasmbin.Reader{B: body}}
			for n := r.U32(); n > 0; n-- {
				name, kind, idx := r.Name(), r.Byte(), r.U32()
				if kind == 0x03 {
					exported[name] = idx
				}
			}
		}
		for _, g := range c.globals {
			if idx, ok := exported[GlobalPrefix+fmt.Sprint(g)]; !ok || idx != g {
				t.Errorf("%s: global %d is not exported (%v)", c.name, g, exported)
			}
		}
	}
	head := "\x00asm\x01\x00\x00\x00"
	for name, refused := range map[string]bool{"kindgi_g3": true, "kindgi_stack": true, "kindgi_go": false, "kindgi_g": false} {
		exp := head + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00" + "\x07" + string(rune(len(name)+4)) + "\x01" + string(rune(len(name))) + name + "\x00\x00" + "\x0a\x04\x01\x02\x00\x0b"
		_, err := Instrument([]byte(exp), Options{})
		if (err != nil) != refused {
			t.Errorf("export %q: %v", name, err)
		}
	}
}
