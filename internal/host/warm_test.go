package host_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/sandbox"
)

// A pack's pooled modules are warmed at load, for the environment its
// calls see: the first call to a Go tool finds an instance of the
// snapshot waiting, and does not run the module's initialisation (on main
// the first call to a Go module at boot spent 12-25 ms there, 100 ms
// beside three others, past a 20 ms deadline).
func TestTheFirstCallFindsThePoolWarm(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	p, err := host.Load(context.Background(), host.Config{
		IndexPath: filepath.Join("..", "..", "wasm-examples", "conformance", "index.json"),
		Sandbox:   sandbox.Config{CacheDir: cacheDir, PoolSize: 2},
		Observe: host.Observer{PoolEvent: func(ev sandbox.PoolEvent) {
			mu.Lock()
			defer mu.Unlock()
			seen[string(ev.Kind)]++
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(context.Background()) }()
	o := p.Dispatch(context.Background(), host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"m"},"ctx":{"tenantId":"t","runId":"r"}}`)})
	if !o.OK() || string(o.Response) != `{"v":2,"kind":"result","output":{"message":"m"}}` {
		t.Fatalf("echo: %s", o.Response)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["hit"] != 1 || seen["miss"] != 0 {
		t.Fatalf("the first call's pool events: %v, want one hit and no miss", seen)
	}
}
