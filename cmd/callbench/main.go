// Command callbench measures what a call costs in the sandbox, with a
// fresh instance per call (the naive path) and from a pool of instances
// reset to their snapshot, side by side in one run: per-call median, p99
// and allocations, and their ratio, for a tiny .wat module and the Go
// echo pack; then the cost against input size (curves.go) and against
// the pages a call writes (pages.go). `make bench` runs it; it prints the
// issue-10 and issue-25 targets beside the figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

type subject struct {
	name, path string
	body       []byte
	calls      int // per round, fresh; pooled runs poolFactor times as many
	// targets: pooled median at most maxMedian, and at most maxRatio of
	// the fresh median; pooled allocations at most maxAllocs (0: none)
	maxMedian time.Duration
	maxRatio  float64
	maxAllocs float64
}

const poolFactor = 10

type result struct {
	times  []time.Duration
	allocs uint64
	calls  int
}

func (r *result) quantile(q float64) time.Duration {
	slices.Sort(r.times)
	return r.times[min(len(r.times)-1, int(q*float64(len(r.times))))]
}

func (r *result) allocsPerCall() float64 { return float64(r.allocs) / float64(r.calls) }

func main() {
	rounds := flag.Int("rounds", 4, "rounds; each runs every subject fresh then pooled")
	root := flag.String("root", ".", "the repository")
	only := flag.String("only", "calls,inputs,items,pages", "the tables to print: calls (fresh against pooled), inputs, items, pages")
	flag.Parse()
	want := map[string]bool{}
	for _, t := range strings.Split(*only, ",") {
		switch t {
		case "calls", "inputs", "items", "pages":
			want[t] = true
		default:
			fatal(fmt.Errorf("-only: no table %q (calls, inputs, items, pages)", t))
		}
	}
	subjects := []subject{
		{name: "tiny .wat module", path: "testdata/hostile/counter.wasm", calls: 5000, maxMedian: 5 * time.Microsecond, maxRatio: 0.3},
		{name: "Go echo pack", path: "wasm-examples/echo/echo.wasm", calls: 100, maxMedian: 100 * time.Microsecond, maxRatio: 0.02, maxAllocs: 16,
			body: []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`)},
		// Issue 26: a pooled TypeScript echo call <= 50 us.
		{name: "TS echo pack", path: "wasm-examples/ts-echo/echo.wasm", calls: 100, maxMedian: 50 * time.Microsecond, maxRatio: 0.02, maxAllocs: 16,
			body: []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`)},
		// Issue 44: a pooled Python echo call <= 250 us (a fresh one starts
		// CPython: few calls).
		{name: "Py echo pack", path: "wasm-examples/py-echo/echo.wasm", calls: 10, maxMedian: 250 * time.Microsecond, maxRatio: 0.02, maxAllocs: 16,
			body: []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`)},
	}
	ctx := context.Background()
	failed := false
	for _, s := range subjects {
		if !want["calls"] {
			break
		}
		if s.name == subjects[0].name {
			fmt.Printf("%-18s %-7s %10s %10s %12s\n", "module", "path", "median", "p99", "allocs/call")
		}
		// Room for every time up front: appending allocates nothing.
		res := [2]result{{times: make([]time.Duration, 0, *rounds*s.calls)}, {times: make([]time.Duration, 0, *rounds*s.calls*poolFactor)}}
		mods, closeMods := modules(ctx, *root, s.path)
		for i := range mods { // warm: compile caches, the pool's snapshot
			run(ctx, mods[i], s.body, 20, nil)
		}
		for r := 0; r < *rounds; r++ {
			run(ctx, mods[0], s.body, s.calls, &res[0])
			run(ctx, mods[1], s.body, s.calls*poolFactor, &res[1])
		}
		closeMods()
		fresh, pooled := &res[0], &res[1]
		fmt.Printf("%-18s %-7s %10s %10s %12.1f\n", s.name, "fresh", fresh.quantile(.5), fresh.quantile(.99), fresh.allocsPerCall())
		fmt.Printf("%-18s %-7s %10s %10s %12.1f\n", "", "pooled", pooled.quantile(.5), pooled.quantile(.99), pooled.allocsPerCall())
		ratio := float64(pooled.quantile(.5)) / float64(fresh.quantile(.5))
		fmt.Printf("%-18s %-7s %10.4fx %10.4fx %11.4fx\n", "", "ratio", ratio,
			float64(pooled.quantile(.99))/float64(fresh.quantile(.99)), pooled.allocsPerCall()/fresh.allocsPerCall())
		met := verdict(pooled.quantile(.5) <= s.maxMedian, fmt.Sprintf("pooled median <= %s", s.maxMedian))
		met = verdict(ratio <= s.maxRatio, fmt.Sprintf("pooled median <= %gx fresh", s.maxRatio)) && met
		if s.maxAllocs > 0 {
			met = verdict(pooled.allocsPerCall() <= s.maxAllocs, fmt.Sprintf("pooled allocations <= %g per call", s.maxAllocs)) && met
		}
		failed = failed || !met
	}
	if want["inputs"] && !inputCurve(ctx, *root) {
		failed = true
	}
	if want["items"] && !itemsTable(ctx, *root) {
		failed = true
	}
	if want["pages"] {
		pagesCurve(ctx, *root)
	}
	if failed {
		os.Exit(1)
	}
}

// run makes n calls, adding each one's time and the allocations to res.
func run(ctx context.Context, m *sandbox.Module, body []byte, n int, res *result) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		d, err := call(ctx, m, body)
		if err != nil {
			fatal(fmt.Errorf("call failed: %w", err))
		}
		if res != nil {
			res.times = append(res.times, d)
		}
	}
	runtime.ReadMemStats(&after)
	if res != nil {
		res.allocs += after.Mallocs - before.Mallocs
		res.calls += n
	}
}
