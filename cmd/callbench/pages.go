package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// pagesCurve prints what a pooled call costs (the call and the reset
// after it) against the 4 KiB pages it writes, from one to 16,384 (64
// MiB), and what a one-page call costs right after each, beside a
// one-page call after a one-page call, in one run.
func pagesCurve(ctx context.Context, root string) {
	mods, closeMods := modules(ctx, root, "testdata/hostile/writepages.wasm")
	defer closeMods()
	m := mods[1]
	writes := func(pages int) []byte { return []byte(`{"p":"` + strings.Repeat("a", pages) + `"}`) }
	fmt.Printf("\npooled call cost against the pages it writes (median, with its reset), and of the one-page call after it\n")
	fmt.Printf("%-14s %14s %10s %14s %10s\n", "pages written", "the call", "vs 1 page", "the next call", "vs 1 page")
	one, err := median(ctx, m, writes(1), 200)
	if err != nil {
		fatal(err)
	}
	var a time.Duration
	for _, n := range []int{1, 16, 256, 4096, 16384} {
		d, err := median(ctx, m, writes(n), max(5, 4096/n))
		if err != nil {
			fatal(err)
		}
		// The one-page call right after one of n pages, each time.
		var next result
		for i := 0; i < max(5, min(50, 4096/n)); i++ {
			if _, err := call(ctx, m, writes(n)); err != nil {
				fatal(err)
			}
			d, err := call(ctx, m, writes(1))
			if err != nil {
				fatal(err)
			}
			next.times = append(next.times, d)
		}
		a = next.quantile(.5)
		fmt.Printf("%-14d %14s %9.1fx %14s %9.1fx\n", n, d, float64(d)/float64(one), a, float64(a)/float64(one))
	}
	// The issue-25 bar is against an instance fresh from the snapshot,
	// which only the package's own benchmark can make.
	fmt.Printf("  (the one-page call after a 64 MiB write against one on a fresh instance: make bench's BenchmarkResetAfterBigWrite)\n")
}
