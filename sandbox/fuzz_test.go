package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kindgi/packd/sandbox"
)

// FuzzCompileAndCall: arbitrary module bytes either fail to compile with an
// error or compile and run without harming the host.
func FuzzCompileAndCall(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "hostile", "*.wasm"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && len(b) < 4096 {
			f.Add(b)
		}
	}
	sb := newSandbox(f, sandbox.Config{MemoryLimitPages: 64, CacheDir: f.TempDir()})
	f.Fuzz(func(t *testing.T, wasm []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		m, err := sb.Compile(ctx, wasm)
		if err != nil {
			return
		}
		defer m.Close(context.Background())
		_, _ = m.Describe(ctx)
		_, _ = m.Call(ctx, sandbox.Request{Body: []byte(`{}`)})
	})
}
