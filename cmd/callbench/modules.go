package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// fatal ends the run for what the bench cannot go on without.
func fatal(err error) {
	fmt.Fprintln(os.Stderr, "callbench:", err)
	os.Exit(2)
}

// modules compiles the module at path (under root) in two sandboxes, one
// with a fresh instance per call and one pooling an instance (warmed),
// and returns them, fresh first, and the function that closes both.
func modules(ctx context.Context, root, path string) ([2]*sandbox.Module, func()) {
	wasm, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		fatal(fmt.Errorf("%w (run make wasm fixtures)", err))
	}
	var mods [2]*sandbox.Module
	var closers []func()
	for i, pool := range []int{0, 1} {
		sb, err := sandbox.New(ctx, sandbox.Config{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache"), PoolSize: pool})
		if err != nil {
			fatal(err)
		}
		closers = append(closers, func() { _ = sb.Close(ctx) })
		if mods[i], err = sb.Compile(ctx, wasm); err == nil {
			err = mods[i].Warm(ctx, nil)
		}
		if err != nil {
			fatal(err)
		}
	}
	return mods, func() {
		for _, c := range closers {
			c()
		}
	}
}

// call times one call of body; a call that does not answer StatusOK is
// an error.
func call(ctx context.Context, m *sandbox.Module, body []byte) (time.Duration, error) {
	start := time.Now()
	rep, err := m.Call(ctx, sandbox.Request{Body: body})
	d := time.Since(start)
	if err == nil && rep.Status != 0 {
		err = fmt.Errorf("status %d: %.200s", rep.Status, rep.Body)
	}
	return d, err
}

// verdict prints a target beside the figures, and reports whether it was
// met.
func verdict(met bool, what string) bool {
	mark := "ok  "
	if !met {
		mark = "MISS"
	}
	fmt.Printf("  %s %s\n", mark, what)
	return met
}
