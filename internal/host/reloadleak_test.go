package host_test

import (
	"context"
	"runtime"
	"testing"
	"weak"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/sandbox"
)

// TestAReplacedPackIsFreed: a pack loaded to replace another (a reload,
// sharing its memory budget) keeps nothing of it once it is closed: after
// 200 reloads, each old pack closed after its last call, every one of
// them is collected and the heap is back within 4 MiB of where the first
// left it. Before, every new sandbox kept a pointer to the one it replaced
// (its Config.ShareBudgetOf), so every old pack stayed reachable: ~2.8 MiB
// a reload for a Go pack.
func TestAReplacedPackIsFreed(t *testing.T) {
	ctx := context.Background()
	path := writePack(t, indexJSON(tool("hostile.counter", "", "counter.wasm"), ""), map[string][]byte{"counter.wasm": counterWasm(t)})
	cfg := host.Config{IndexPath: path, Sandbox: sandbox.Config{CacheDir: cacheDir, PoolSize: 2, MemoryBudget: 1 << 30}}
	call := []byte(`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	cur, err := host.Load(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var old []weak.Pointer[host.Pack]
	var first uint64
	for i := range 200 {
		if o := cur.Dispatch(ctx, host.Request{Body: call}); !o.OK() {
			t.Fatalf("reload %d: %s", i, o.Response)
		}
		cfg.Replaces = cur
		next, err := host.Load(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := cur.Close(ctx); err != nil {
			t.Fatal(err)
		}
		old = append(old, weak.Make(cur))
		cur = next
		if i == 0 {
			first = heap()
		}
	}
	cfg.Replaces = nil
	defer cur.Close(ctx)
	after := heap()
	kept := 0
	for _, w := range old {
		if w.Value() != nil {
			kept++
		}
	}
	t.Logf("heap after the first reload %.1f MiB, after 200 %.1f MiB", float64(first)/(1<<20), float64(after)/(1<<20))
	if kept > 0 || after > first+4<<20 {
		t.Fatalf("after 200 reloads %d replaced packs are still reachable; the heap is %.1f MiB, %.1f MiB after the first",
			kept, float64(after)/(1<<20), float64(first)/(1<<20))
	}
}
