package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
)

// The price of fuel on CPU-bound code, side by side in one run:
//
//	go test -run '^$' -bench FuelRatio -benchtime 200x ./sandbox   (part of make bench)
//
// unlimited: the module as written, which nothing can stop; closeondone:
// wazero's WithCloseOnContextDone; fuel: packd's instrumented module under a
// budget. spin is a 1M-iteration tight loop, fib(25) a recursion.

var cpuWasm = filepath.Join("..", "..", "testdata", "bench", "cpu.wasm")

type cpuCase struct {
	fn  string
	arg uint64
}

var cpuCases = []cpuCase{{"spin", 1_000_000}, {"fib", 25}}

func plainModule(b *testing.B, closeOnDone bool) (context.Context, api.Module, func()) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(closeOnDone))
	wasm, err := os.ReadFile(cpuWasm)
	if err != nil {
		b.Fatal(err)
	}
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		b.Fatal(err)
	}
	return ctx, mod, func() { _ = rt.Close(ctx) }
}

func meteredModule(b *testing.B) (context.Context, api.Module, func()) {
	ctx := context.Background()
	sb, err := New(ctx, Config{})
	if err != nil {
		b.Fatal(err)
	}
	wasm, err := os.ReadFile(cpuWasm)
	if err != nil {
		b.Fatal(err)
	}
	metered, err := instrument.Instrument(wasm, instrument.Options{})
	if err != nil {
		b.Fatal(err)
	}
	compiled, err := sb.rt.CompileModule(ctx, metered)
	if err != nil {
		b.Fatal(err)
	}
	st := &callState{fuelLeft: MaxFuel, fuelSlice: DefaultFuelSlice}
	ctx = context.WithValue(ctx, stateKey{}, st)
	mod, err := sb.rt.InstantiateModule(ctx, compiled, sb.modCfg)
	if err != nil {
		b.Fatal(err)
	}
	return ctx, mod, func() { _ = sb.Close(context.Background()) }
}

// BenchmarkFuelRatio runs the three variants interleaved, call by call, so
// that a noisy machine slows them alike, and reports each variant's fastest
// call relative to the unlimited one (x-closeondone, x-fuel).
func BenchmarkFuelRatio(b *testing.B) {
	type variant struct {
		ctx context.Context
		mod api.Module
	}
	pctx, plain, d1 := plainModule(b, false)
	defer d1()
	cctx, closing, d2 := plainModule(b, true)
	defer d2()
	mctx, metered, d3 := meteredModule(b)
	defer d3()
	vs := []variant{{pctx, plain}, {cctx, closing}, {mctx, metered}}
	for _, c := range cpuCases {
		b.Run(c.fn, func(b *testing.B) {
			best := []time.Duration{1 << 62, 1 << 62, 1 << 62}
			for b.Loop() {
				for i, v := range vs {
					start := time.Now()
					if _, err := v.mod.ExportedFunction(c.fn).Call(v.ctx, c.arg); err != nil {
						b.Fatal(err)
					}
					best[i] = min(best[i], time.Since(start))
				}
			}
			b.ReportMetric(float64(best[0].Microseconds()), "µs-unlimited")
			b.ReportMetric(float64(best[1])/float64(best[0]), "x-closeondone")
			b.ReportMetric(float64(best[2])/float64(best[0]), "x-fuel")
		})
	}
}
