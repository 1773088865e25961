package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// FuzzCompileAndCall: arbitrary module bytes either fail to compile with an
// error or compile and run without harming the host, with fresh instances
// and with pooled ones.
func FuzzCompileAndCall(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "hostile", "*.wasm"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && len(b) < 4096 {
			f.Add(b)
		}
	}
	cache := f.TempDir()
	sb := newSandbox(f, sandbox.Config{MemoryLimitPages: 64, CacheDir: cache})
	pooled := newSandbox(f, sandbox.Config{MemoryLimitPages: 64, CacheDir: cache, PoolSize: 2})
	f.Fuzz(func(t *testing.T, wasm []byte) {
		for _, sb := range []*sandbox.Sandbox{sb, pooled} {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			m, err := sb.Compile(ctx, wasm)
			if err != nil {
				cancel()
				return
			}
			_, _ = m.Describe(ctx)
			for i := 0; i < 2; i++ { // a pooled module: the second call reuses
				_, _ = m.Call(ctx, sandbox.Request{Body: []byte(`{}`), CallLimits: sandbox.CallLimits{Fuel: 10_000_000}})
			}
			_ = m.Close(context.Background())
			cancel()
		}
	})
}
