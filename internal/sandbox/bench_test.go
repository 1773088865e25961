package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/abi"
)

// Per-call cost of the Go echo guest, next to the instantiate-per-call
// baseline it is built on:
//
//	make bench   (or: go test -run '^$' -bench . -benchmem -count 5 ./sandbox)
//
// BenchmarkCallEchoGo         a full Module.Call: fresh instance, Go runtime
//                             init (_initialize), kindgi_call, close
// BenchmarkBaselineInstantiate instantiate + close, nothing run: the floor
// BenchmarkBaselineInitialize  instantiate + _initialize + close: the floor
//                             for any Go guest under instantiate-per-call
// BenchmarkCallCounterWat     a full call of a tiny hand-written module
// BenchmarkCallPooled*         the same calls from a pool of instances reset
//                             to their snapshot (Config.PoolSize)

var echoRequest = []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`)

func benchModule(b *testing.B, path string) (*Sandbox, *Module) {
	return benchModulePooled(b, path, 0)
}

func benchModulePooled(b *testing.B, path string, pool int) (*Sandbox, *Module) {
	b.Helper()
	// The tests' byte-for-byte check of every reset is not part of a call.
	verifyResets = false
	b.Cleanup(func() { verifyResets = true })
	ctx := context.Background()
	sb, err := New(ctx, Config{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache"), PoolSize: pool})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sb.Close(ctx) })
	wasm, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("%v (run make wasm)", err)
	}
	m, err := sb.Compile(ctx, wasm)
	if err != nil {
		b.Fatal(err)
	}
	return sb, m
}

var echoWasm = filepath.Join("..", "..", "wasm-examples", "echo", "echo.wasm")

func BenchmarkCallEchoGo(b *testing.B) {
	_, m := benchModule(b, echoWasm)
	benchCalls(b, m, echoRequest)
}

// benchCalls times Module.Call with one request.
func benchCalls(b *testing.B, m *Module, body []byte) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rep, err := m.Call(ctx, Request{Body: body})
		if err != nil || rep.Status != abi.StatusOK {
			b.Fatal(rep, err)
		}
	}
}

func BenchmarkBaselineInstantiate(b *testing.B) {
	sb, m := benchModule(b, echoWasm)
	ctx := context.WithValue(context.Background(), stateKey{}, &callState{})
	b.ReportAllocs()
	for b.Loop() {
		inst, err := sb.rt.InstantiateModule(ctx, m.compiled, sb.modCfg)
		if err != nil {
			b.Fatal(err)
		}
		_ = inst.Close(ctx)
	}
}

func BenchmarkBaselineInitialize(b *testing.B) {
	sb, m := benchModule(b, echoWasm)
	st := &callState{stdout: lineWriter{sink: sinkFor(nil, "stdout", sb.stdout)}, stderr: lineWriter{sink: sinkFor(nil, "stderr", sb.stderr)}, fuelLeft: MaxFuel, fuelSlice: DefaultFuelSlice}
	ctx := context.WithValue(context.Background(), stateKey{}, st)
	b.ReportAllocs()
	for b.Loop() {
		inst, err := sb.rt.InstantiateModule(ctx, m.compiled, sb.modCfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := inst.ExportedFunction(abi.ExportInitialize).Call(ctx); err != nil {
			b.Fatal(err)
		}
		_ = inst.Close(ctx)
	}
}

func BenchmarkCallCounterWat(b *testing.B) {
	_, m := benchModule(b, filepath.Join("..", "..", "testdata", "hostile", "counter.wasm"))
	benchCalls(b, m, nil)
}

func BenchmarkCallPooledEchoGo(b *testing.B) {
	_, m := benchModulePooled(b, echoWasm, 1)
	benchCalls(b, m, echoRequest)
}

// BenchmarkCallPooledEchoGoRecorded: the pooled Go echo call, side by
// side without a tape and recording one (issue 29: recording's cost),
// and replaying it.
//
//	go test -run '^$' -bench CallPooledEchoGoRecorded -count 3 ./sandbox
func BenchmarkCallPooledEchoGoRecorded(b *testing.B) {
	_, m := benchModulePooled(b, echoWasm, 1)
	ctx := context.Background()
	for _, mode := range []string{"none", "record", "replay"} {
		b.Run(mode, func(b *testing.B) {
			tape := &Tape{}
			if mode == "replay" {
				if _, err := m.Call(ctx, Request{Body: echoRequest, Record: tape}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			answers := 0
			for b.Loop() {
				req := Request{Body: echoRequest}
				switch mode {
				case "record":
					tape = &Tape{}
					req.Record = tape
				case "replay":
					tape.Rewind()
					req.Replay = tape
				}
				rep, err := m.Call(ctx, req)
				if err != nil || rep.Status != abi.StatusOK {
					b.Fatal(rep, err)
				}
				answers = len(tape.Answers)
			}
			b.ReportMetric(float64(answers), "answers/call")
		})
	}
}

func BenchmarkCallPooledCounterWat(b *testing.B) {
	_, m := benchModulePooled(b, filepath.Join("..", "..", "testdata", "hostile", "counter.wasm"), 1)
	benchCalls(b, m, nil)
}

// BenchmarkCallCEcho64KiB: the C echo pack answering a 64 KiB input, in a
// fresh instance per call and pooled (part of make bench). The C SDK's heap
// headroom keeps the pooled instance's memory from growing, so it is reset
// and kept; before it every pooled call grew its memory and its instance
// was discarded and made again, at 2.2x a fresh instance's cost.
func BenchmarkCallCEcho64KiB(b *testing.B) {
	body := []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"text":"` + strings.Repeat("a", 64<<10) + `"},"ctx":{"tenantId":"t","runId":"r"}}`)
	freshAndPooled(b, filepath.Join("..", "..", "wasm-examples", "c-echo", "echo.wasm"), body, false)
}

// freshAndPooled times calls of body on the module at path, in a fresh
// instance per call and pooled, as two sub-benchmarks; with fuel, each
// reports the fuel a call burns too.
func freshAndPooled(b *testing.B, path string, body []byte, fuel bool) {
	for _, pool := range []int{0, 1} {
		name := "fresh"
		if pool > 0 {
			name = "pooled"
		}
		b.Run(name, func(b *testing.B) {
			_, m := benchModulePooled(b, path, pool)
			benchCalls(b, m, body)
			if fuel {
				reportFuel(b, m, body)
			}
		})
	}
}

// BenchmarkPoolMissGo times what a pool miss costs once the snapshot is
// taken: an instance of the Go echo module made from it.
func BenchmarkPoolMissGo(b *testing.B) {
	_, m := benchModulePooled(b, echoWasm, 1)
	if err := m.Warm(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		pi, err := m.pool.fresh(context.Background(), nil, MaxFuel)
		if err != nil {
			b.Fatal(err)
		}
		pi.close()
	}
}

// BenchmarkResetAfterBigWrite times the one-page call of writepages.wasm,
// with its reset, on a pooled instance in three states, interleaved round
// by round: fresh from the snapshot (made just before, untimed), after a
// one-page call, and after a call that wrote 64 MiB. It reports each
// median and the issue-25 ratio (after-64MiB/fresh, at most 2). Run it
// with a count of rounds (make bench: -benchtime 20x): each round's 64 MiB
// call takes a quarter of a second.
func BenchmarkResetAfterBigWrite(b *testing.B) {
	_, m := benchModulePooled(b, filepath.Join("..", "..", "testdata", "hostile", "writepages.wasm"), 1)
	ctx := context.Background()
	writes := func(pages int) []byte { return []byte(`{"p":"` + strings.Repeat("a", pages) + `"}`) }
	call := func(body []byte) time.Duration {
		start := time.Now()
		if rep, err := m.Call(ctx, Request{Body: body}); err != nil || rep.Status != abi.StatusOK {
			b.Fatal(rep, err)
		}
		return time.Since(start)
	}
	one, big := writes(1), writes(16384)
	fresh := func() {
		if pi := m.pool.pop(); pi != nil {
			pi.close()
		}
		pi, err := m.pool.fresh(ctx, nil, m.sb.cfg.DefaultFuel)
		if err != nil {
			b.Fatal(err)
		}
		m.pool.keep(pi)
	}
	call(one)
	var times [3][]time.Duration
	for b.Loop() {
		fresh()
		times[0] = append(times[0], call(one))
		call(one)
		times[1] = append(times[1], call(one))
		call(big)
		times[2] = append(times[2], call(one))
	}
	median := func(t []time.Duration) float64 { slices.Sort(t); return float64(t[len(t)/2]) }
	b.ReportMetric(median(times[0]), "fresh-ns")
	b.ReportMetric(median(times[1]), "after-1-page-ns")
	b.ReportMetric(median(times[2]), "after-64MiB-ns")
	b.ReportMetric(median(times[2])/median(times[0]), "after-64MiB/fresh")
}

// BenchmarkCallPooledEchoGoConcurrent: the pooled Go echo called from 32
// goroutines at once over a pool of 32, as a service at its concurrency
// cap calls it: what a call costs when resets run side by side.
func BenchmarkCallPooledEchoGoConcurrent(b *testing.B) {
	_, m := benchModulePooled(b, echoWasm, 32)
	if err := m.Warm(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(16) // 32 goroutines on 2 CPUs
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rep, err := m.Call(ctx, Request{Body: echoRequest})
			if err != nil || rep.Status != abi.StatusOK {
				b.Error(rep, err)
				return
			}
		}
	})
}

// BenchmarkCallEchoTS: the TypeScript echo pack (wasm-examples/ts-echo,
// QuickJS with the pack evaluated at _initialize) in a fresh instance per
// call and pooled, beside BenchmarkCallEchoGo and the C echo (make bench).
// It reports the fuel a call burns.
func BenchmarkCallEchoTS(b *testing.B) {
	freshAndPooled(b, filepath.Join("..", "..", "wasm-examples", "ts-echo", "echo.wasm"), echoRequest, true)
	// The same echo with a zod input schema (zod parses it in the guest).
	b.Run("pooled-zod", func(b *testing.B) {
		_, m := benchModulePooled(b, filepath.Join("..", "..", "wasm-examples", "ts-conformance", "conformance.wasm"), 1)
		body := []byte(`{"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`)
		benchCalls(b, m, body)
		reportFuel(b, m, body)
	})
}

// reportFuel reports the fuel one more call burns.
func reportFuel(b *testing.B, m *Module, body []byte) {
	rep, err := m.Call(context.Background(), Request{Body: body})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(rep.FuelUsed), "fuel/call")
}
