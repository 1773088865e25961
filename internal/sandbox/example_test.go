package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kindgi/packd/internal/sandbox"
)

// Compile a guest module once, then call it; each call runs in an
// instance of its own (here from a pool of one, reset between calls).
func ExampleSandbox_Compile() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandbox.Config{PoolSize: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close(ctx)
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "counter.wasm"))
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := sb.Compile(ctx, wasm)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close(ctx)
	for i := 0; i < 2; i++ {
		rep, err := m.Call(ctx, sandbox.Request{})
		fmt.Println(string(rep.Body), err)
	}
	// Output:
	// {"global":1,"memory":1} <nil>
	// {"global":1,"memory":1} <nil>
}
