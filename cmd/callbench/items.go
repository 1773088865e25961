package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox"
)

// itemsInput is a tool input of about n bytes made of many small items,
// the shape of structured agent input: {"items":[{"id":0,"name":"item
// 0","tags":["a","b"],"ok":true,"score":0.5},…]}.
func itemsInput(n int) []byte {
	b := []byte(`{"items":[`)
	for i := 0; len(b) < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"name":"item `...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","tags":["a","b"],"ok":true,"score":`...)
		b = strconv.AppendFloat(b, float64(i%100)/4, 'g', -1, 64)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// itemsTable prints what a call with an input of many small items costs
// (64 KiB and 1 MiB) for the Go, C and TypeScript echo packs, fresh and
// pooled, side by side in one run, with the fuel a pooled call used, and
// the issue-43 targets beside the figures: pooled Go <= 3x C and TS <= 4x
// C at 64 KiB; pooled <= 0.5x fresh at 64 KiB and <= 1x at 1 MiB in every
// language. It reports whether every target was met.
func itemsTable(ctx context.Context, root string) bool {
	packs := []string{"Go echo", "C echo", "TS echo"}
	paths := map[string]string{"Go echo": "wasm-examples/echo/echo.wasm", "C echo": "wasm-examples/c-echo/echo.wasm", "TS echo": "wasm-examples/ts-echo/echo.wasm"}
	sizes := []struct {
		name          string
		bytes         int
		fresh, pooled int // calls
	}{{"64 KiB", 64 << 10, 10, 50}, {"1 MiB", 1 << 20, 3, 5}}
	fmt.Printf("\nper-call cost of an input of many small items (median; default fuel)\n")
	fmt.Printf("%-8s %-7s %12s %12s %13s %14s\n", "pack", "input", "fresh", "pooled", "pooled/fresh", "fuel/byte")
	type cell struct{ fresh, pooled time.Duration }
	cells := map[string]cell{}
	for _, p := range packs {
		mods, closeMods := modules(ctx, root, paths[p])
		for _, size := range sizes {
			input := itemsInput(size.bytes)
			body := append(append([]byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":`), input...), `,"ctx":{"tenantId":"t","runId":"r"}}`...)
			fresh, ferr := median(ctx, mods[0], body, size.fresh)
			pooled, perr := median(ctx, mods[1], body, size.pooled)
			if ferr != nil || perr != nil {
				fmt.Printf("%-8s %-7s %12s %12s\n", p, size.name, orErr(fresh, ferr), orErr(pooled, perr))
				continue
			}
			rep, _ := mods[1].Call(ctx, sandbox.Request{Body: body})
			cells[p+"/"+size.name] = cell{fresh, pooled}
			fmt.Printf("%-8s %-7s %12s %12s %12.3fx %14.1f\n", p, size.name, fresh, pooled,
				float64(pooled)/float64(fresh), float64(rep.FuelUsed)/float64(len(input)))
		}
		closeMods()
	}
	ok := true
	c, cok := cells["C echo/64 KiB"]
	for _, t := range []struct {
		pack string
		max  float64
	}{{"Go echo", 3}, {"TS echo", 4}} {
		x, xok := cells[t.pack+"/64 KiB"]
		r := float64(x.pooled) / float64(c.pooled)
		ok = verdict(cok && xok && r <= t.max, fmt.Sprintf("64 KiB of items pooled: %s %.2fx C (target <= %gx)", t.pack, r, t.max)) && ok
	}
	ok = fiveMiBGoEcho(ctx, root, paths["Go echo"]) && ok
	for _, p := range packs {
		for _, s := range []struct {
			size string
			max  float64
		}{{"64 KiB", 0.5}, {"1 MiB", 1}} {
			x, xok := cells[p+"/"+s.size]
			r := float64(x.pooled) / float64(x.fresh)
			ok = verdict(xok && r <= s.max, fmt.Sprintf("%s %s of items: pooled %.2fx fresh (target <= %gx)", p, s.size, r, s.max)) && ok
		}
	}
	return ok
}

// fiveMiBGoEcho reports whether the Go echo pack answers 5 MiB of many
// small items at the default fuel (issue 43), with the fuel it used.
func fiveMiBGoEcho(ctx context.Context, root, path string) bool {
	mods, closeMods := modules(ctx, root, path)
	defer closeMods()
	input := itemsInput(5 << 20)
	body := append(append([]byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":`), input...), `,"ctx":{"tenantId":"t","runId":"r"}}`...)
	rep, err := mods[0].Call(ctx, sandbox.Request{Body: body})
	answered := err == nil && rep.Status == abi.StatusOK && len(rep.Body) == len(input)
	return verdict(answered, fmt.Sprintf("a 5 MiB Go echo answers at the default fuel (%d of %d; %v)", rep.FuelUsed, sandbox.DefaultFuel, err))
}
