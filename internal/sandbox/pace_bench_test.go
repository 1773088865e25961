package sandbox_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// What a unit of fuel costs in wall time, by what the guest spends it on,
// side by side in one run (part of make bench):
//
//	go test -run '^$' -bench FuelPace -benchtime 5x ./sandbox
//
// work is a loop of plain instructions, grow one-page memory.grow calls up
// to the memory limit, fill a whole-memory memory.fill, freshfill one
// memory.fill over 1 GiB just grown (each page's first touch is paid for by
// memory.grow's price) and memory.copy after it, tablegrow table.grow
// by 65536 elements up to the table limit, and the floods of host work
// (fd_write, random_get, log), and the Go and C echo packs answering a
// 64 KiB input (pooled: the call's own work). Each reports ns/fuel: the
// prices of memory.grow, table.grow and host work are set so that these
// stay close, and a Go guest's fuel per nanosecond is to stay within 2x of
// plain code's (work; issue 25).
func BenchmarkFuelPace(b *testing.B) {
	sb := newSandbox(b, sandbox.Config{})
	big := newSandbox(b, sandbox.Config{MemoryLimitPages: 20000})
	pooled := newSandbox(b, sandbox.Config{PoolSize: 1})
	echo := []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"text":"` + strings.Repeat("a", 64<<10) + `"},"ctx":{"tenantId":"t","runId":"r"}}`)
	for _, name := range []string{"work", "grow", "fill", "freshfill", "tablegrow", "fdflood", "randomflood", "logflood", "jsonscanspin", "goecho", "cecho"} {
		body := []byte(`{}`)
		var m *sandbox.Module
		switch name {
		case "freshfill", "jsonscanspin":
			m = compile(b, big, hostile(name))
		case "goecho":
			m, body = compile(b, pooled, filepath.Join("..", "..", "wasm-examples", "echo", "echo.wasm")), echo
		case "cecho":
			m, body = compile(b, pooled, filepath.Join("..", "..", "wasm-examples", "c-echo", "echo.wasm")), echo
		default:
			m = compile(b, sb, hostile(name))
		}
		b.Run(name, func(b *testing.B) {
			var fuel int64
			var wall time.Duration
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				start := time.Now()
				budget := int64(sandbox.MaxFuel)
				switch name {
				case "fill", "fdflood", "randomflood", "logflood":
					budget = 2_000_000_000 // they run for ever
				case "freshfill":
					budget = 20_000_000_000 // 17e9 of it to grow
				case "jsonscanspin":
					budget = 10_000_000_000 // a 256 MiB memory.fill (33e6), then scans
				}
				rep, err := m.Call(ctx, sandbox.Request{Body: body, CallLimits: sandbox.CallLimits{Fuel: budget}})
				wall += time.Since(start)
				cancel()
				// grow writes past its memory at the end, the others run
				// out of fuel
				if err != nil && budget == sandbox.MaxFuel && name != "grow" {
					b.Fatal(err)
				}
				fuel += rep.FuelUsed
			}
			b.ReportMetric(float64(wall.Nanoseconds())/float64(fuel), "ns/fuel")
			b.ReportMetric(float64(fuel)/float64(b.N), "fuel/op")
		})
	}
}

// BenchmarkFuelRate is the fuel a nanosecond of a Go guest (the Go echo
// pack answering a 64 KiB input, pooled) beside plain code (the work
// loop), their calls interleaved in one run; it reports both rates and
// go/plain (issue 25: at most 2; a Go guest burnt 12-16x plain code's rate
// when a loop's whole body was charged at every iteration). Part of make
// bench: -benchtime 40x.
func BenchmarkFuelRate(b *testing.B) {
	plain := compile(b, newSandbox(b, sandbox.Config{}), hostile("work"))
	goEcho := compile(b, newSandbox(b, sandbox.Config{PoolSize: 1}), filepath.Join("..", "..", "wasm-examples", "echo", "echo.wasm"))
	echo := []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"text":"` + strings.Repeat("a", 64<<10) + `"},"ctx":{"tenantId":"t","runId":"r"}}`)
	var fuel [2]int64
	var wall [2]time.Duration
	call := func(i int, m *sandbox.Module, body []byte) {
		start := time.Now()
		rep, err := m.Call(context.Background(), sandbox.Request{Body: body})
		wall[i] += time.Since(start)
		if err != nil || rep.Status != 0 {
			b.Fatal(rep.Status, err)
		}
		fuel[i] += rep.FuelUsed
	}
	call(1, goEcho, echo) // the snapshot
	fuel, wall = [2]int64{}, [2]time.Duration{}
	for b.Loop() {
		call(0, plain, []byte(`{}`))
		call(1, goEcho, echo)
	}
	rate := func(i int) float64 { return float64(fuel[i]) / float64(wall[i].Nanoseconds()) }
	b.ReportMetric(rate(0), "plain-fuel/ns")
	b.ReportMetric(rate(1), "go-fuel/ns")
	b.ReportMetric(rate(1)/rate(0), "go/plain")
}
