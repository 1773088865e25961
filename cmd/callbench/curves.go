package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// echoPack is an echo pack the input-size curve runs: the tool's input
// is {field: "<n bytes>"}.
type echoPack struct{ name, path, field string }

// inputCurve prints what a call costs against the size of its input (1
// KiB, 64 KiB, 1 MiB) for the Go, C and TypeScript echo packs, fresh and pooled, side
// by side in one run: medians, pooled over fresh, and each size over the
// 1 KiB call; then the issue-25 targets beside the figures. It reports
// whether every target was met.
func inputCurve(ctx context.Context, root string) bool {
	packs := []echoPack{
		{"Go echo", "wasm-examples/echo/echo.wasm", "message"},
		{"C echo", "wasm-examples/c-echo/echo.wasm", "text"},
		{"TS echo", "wasm-examples/ts-echo/echo.wasm", "message"},
	}
	sizes := []struct {
		name          string
		bytes         int
		fresh, pooled int // calls
	}{{"1 KiB", 1 << 10, 20, 200}, {"64 KiB", 64 << 10, 10, 50}, {"1 MiB", 1 << 20, 3, 5}}
	fmt.Printf("\nper-call cost against input size (median; default fuel)\n")
	fmt.Printf("%-8s %-7s %12s %12s %13s %12s\n", "pack", "input", "fresh", "pooled", "pooled/fresh", "pooled/1KiB")
	medians := map[string][2]time.Duration{} // pack/size: fresh, pooled
	for _, p := range packs {
		mods, closeMods := modules(ctx, root, p.path)
		defer closeMods()
		var base time.Duration
		for _, size := range sizes {
			body := []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"` + p.field + `":"` + strings.Repeat("a", size.bytes) + `"},"ctx":{"tenantId":"t","runId":"r"}}`)
			fresh, ferr := median(ctx, mods[0], body, size.fresh)
			pooled, perr := median(ctx, mods[1], body, size.pooled)
			if ferr != nil || perr != nil {
				fmt.Printf("%-8s %-7s %12s %12s\n", p.name, size.name, orErr(fresh, ferr), orErr(pooled, perr))
				continue
			}
			if base == 0 {
				base = pooled
			}
			medians[p.name+"/"+size.name] = [2]time.Duration{fresh, pooled}
			fmt.Printf("%-8s %-7s %12s %12s %12.3fx %11.1fx\n", p.name, size.name, fresh, pooled,
				float64(pooled)/float64(fresh), float64(pooled)/float64(base))
		}
	}
	goEcho, goOK := medians["Go echo/64 KiB"]
	ok := verdict(goOK && goEcho[1] <= time.Millisecond, "a 64 KiB Go echo <= 1 ms pooled")
	_, mib := medians["Go echo/1 MiB"]
	ok = verdict(mib, "a 1 MiB Go echo answers within the default fuel") && ok
	cEcho, cOK := medians["C echo/64 KiB"]
	return verdict(cOK && cEcho[1]*2 <= cEcho[0], "a 64 KiB C echo <= 0.5x fresh pooled") && ok
}

// median times n calls of body (after one more, unmeasured) and returns
// their median, or the first call's error.
func median(ctx context.Context, m *sandbox.Module, body []byte, n int) (time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for i := -1; i < n; i++ {
		d, err := call(ctx, m, body)
		if err != nil {
			return 0, err
		}
		if i >= 0 {
			times = append(times, d)
		}
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// orErr is d, or what went wrong in a few words.
func orErr(d time.Duration, err error) string {
	switch {
	case errors.Is(err, sandbox.ErrOutOfFuel):
		return "out of fuel"
	case err != nil:
		return "failed"
	}
	return d.String()
}
