package sandbox_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kindgi/packd/sandbox"
)

// TestACPackWithALargerInputStaysPooled: the C echo pack answering a 64 KiB
// input does not grow its memory, so its pooled instance is reset and kept:
// the C SDK leaves heap headroom in the snapshot, as the Go SDK does. On
// main every such call grew the memory, and every instance was discarded
// as grown and made again.
func TestACPackWithALargerInputStaysPooled(t *testing.T) {
	var pool poolEvents
	sb := newSandbox(t, sandbox.Config{PoolSize: 1, PoolEvents: pool.add})
	m := compile(t, sb, filepath.Join("..", "wasm-examples", "c-echo", "echo.wasm"))
	input := `{"text":"` + strings.Repeat("a", 64<<10) + `"}`
	body := []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":` + input + `,"ctx":{"tenantId":"t","runId":"r"}}`)
	for i := 0; i < 5; i++ {
		rep, err := m.Call(context.Background(), sandbox.Request{Body: body})
		if err != nil || string(rep.Body) != input {
			t.Fatalf("call %d: %d bytes, %v", i, len(rep.Body), err)
		}
	}
	if events := pool.take(); events["discard/grown"] != 0 || events["miss/"] > 1 {
		t.Fatalf("pool events %v: the instance was not kept", events)
	}
}
