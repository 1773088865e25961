package host_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kindgi/packd/host"
	"github.com/kindgi/packd/sandbox"
)

// BenchmarkDispatchEcho is the whole pipeline for one call of the Go echo
// pack: parse, resolve, fill defaults, validate input, run in a fresh
// instance, validate output, encode. `make bench` runs it.
func BenchmarkDispatchEcho(b *testing.B) {
	ctx := context.Background()
	p, err := host.Load(ctx, host.Config{
		IndexPath: filepath.Join("..", "wasm-examples", "echo", "index.json"),
		Sandbox:   sandbox.Config{CacheDir: cacheDir, PoolSize: 1},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	msg := []byte(`{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if o := p.Dispatch(ctx, msg, 0); !o.OK() {
			b.Fatalf("%s", o.Response)
		}
	}
}
