package instrument

import (
	"context"
	"errors"
	"os"
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
	wasm, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "instrument", "renum.wasm"))
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
		"not wasm":              "hello",
		"unknown opcode":        head + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x05\x01\x03\x00\xff\x0b",
		"truncated body":        head + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x04\x01\x05\x00\x01",
		"already has fuel":      head + "\x07\x0f\x01\x0bkindgi_fuel\x03\x00",
		"sections out of order": head + "\x03\x02\x01\x00\x01\x04\x01\x60\x00\x00",
	}
	for name, bin := range cases {
		if _, err := Instrument([]byte(bin), Options{}); !errors.Is(err, ErrInstrument) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// FuzzInstrument: for any module wazero accepts, the instrumented module is
// accepted too, and its exported functions without parameters give the same
// results (or both fail).
func FuzzInstrument(f *testing.F) {
	for _, glob := range []string{"hostile/*.wasm", "bench/*.wasm", "instrument/*.wasm"} {
		paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "testdata", glob))
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	refills := 0
	ctx, rt := runtimeWithHosts(f, &refills)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		if len(wasm) > 1<<16 || Prescan(wasm) != nil {
			return
		}
		orig, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			return
		}
		defer orig.Close(ctx)
		metered, err := Instrument(wasm, Options{})
		if err != nil {
			t.Fatalf("wazero accepts the module, the pass does not: %v", err)
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
