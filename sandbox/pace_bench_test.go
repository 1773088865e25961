package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/kindgi/packd/sandbox"
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
// (fd_write, random_get, log). Each reports ns/fuel: the prices of
// memory.grow, table.grow and host work are set so that these stay close.
func BenchmarkFuelPace(b *testing.B) {
	sb := newSandbox(b, sandbox.Config{})
	big := newSandbox(b, sandbox.Config{MemoryLimitPages: 20000})
	for _, name := range []string{"work", "grow", "fill", "freshfill", "tablegrow", "fdflood", "randomflood", "logflood"} {
		m := compile(b, sb, hostile(name))
		if name == "freshfill" {
			m = compile(b, big, hostile(name))
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
				}
				rep, err := m.Call(ctx, sandbox.Request{Body: []byte(`{}`), Fuel: budget})
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
