package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kindgi/packd/internal/sandbox"
)

// TestACPackWithALargerInputStaysPooled: the C echo pack answering a 64 KiB
// input does not grow its memory, so its pooled instance is reset and kept:
// the C SDK leaves heap headroom in the snapshot, as the Go SDK does. On
// main every such call grew the memory, and every instance was discarded
// as grown and made again.
func TestACPackWithALargerInputStaysPooled(t *testing.T) {
	var pool poolEvents
	sb := newSandbox(t, sandbox.Config{PoolSize: 1, PoolEvents: pool.add})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "c-echo", "echo.wasm"))
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

// TestAGrownInstanceIsResetAndKept: an instance whose call grew its memory
// is set back to its snapshot's size and reset, not closed: the next call
// on it sees the snapshot's memory size, and what the grown call wrote
// past it reads as zeros when it grows again (the canary checks both), and
// the budget gets the grown bytes back. On main every such instance was
// discarded as grown and made again. Where packd does not map memory (the
// portable mode) it is still discarded.
func TestAGrownInstanceIsResetAndKept(t *testing.T) {
	eachResetMode(t, func(t *testing.T, mode string) {
		var pool poolEvents
		sb := newSandbox(t, sandbox.Config{PoolSize: 1, PoolEvents: pool.add})
		m := compile(t, sb, hostile("canary"))
		for i, how := range []string{"ok", "grow", "ok", "grow", "grow", "read", "ok", "grow", "ok"} {
			rep, err := canaryCall(t, m, how)
			switch {
			case how == "read": // past the snapshot's size: out of bounds
				var trap *sandbox.TrapError
				if !errors.As(err, &trap) || !strings.Contains(trap.Message, "out of bounds") {
					t.Fatalf("call %d: a load past the memory a grown instance was cut back to: %s %v, want a trap", i, rep.Body, err)
				}
				continue
			case err != nil || string(rep.Body) != `{"dirty":false}`:
				t.Fatalf("call %d (%s): %s %v", i, how, rep.Body, err)
			}
			want := int64(32 * 65536) // the idle instance's
			if mode == "portable" && how == "grow" {
				want = 0 // discarded
			}
			if used := sb.MemoryInUse(); used != want {
				t.Fatalf("call %d (%s): the budget holds %d bytes, want %d", i, how, used, want)
			}
		}
		events := pool.take()
		if mode == "portable" {
			if events["discard/grown"] != 4 {
				t.Fatalf("portable: pool events %v, want the 4 grown instances discarded", events)
			}
			return
		}
		if events["discard/grown"] != 0 || events["miss/"] != 2 { // the second after the trap
			t.Fatalf("pool events %v: a grown instance was not kept", events)
		}
	})
}

// TestStructuredInputsDoNotGrowMemory: a pooled TypeScript echo of 64 KiB
// of small items (some 800 KB of QuickJS values) and a C echo of 1 MiB of
// them answer within the heap the snapshot holds: their memory ends the
// call at the snapshot's size. Before, the JS runtime's headroom was
// dropped by clang (a malloc whose block was only freed) and every such
// call grew memory by 12 pages, a million fuel each; the C SDK's 2 MiB
// left a 1 MiB echo 16 pages short.
func TestStructuredInputsDoNotGrowMemory(t *testing.T) {
	items := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"items":[`)
		for i := 0; b.Len() < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%d,"name":"item %d","tags":["a","b"],"ok":true,"score":%g}`, i, i, float64(i%100)/4)
		}
		b.WriteString("]}")
		return b.String()
	}
	for _, c := range []struct{ name, path, input string }{
		{"TS echo 64 KiB", filepath.Join("..", "..", "wasm-examples", "ts-echo", "echo.wasm"), items(64 << 10)},
		{"C echo 1 MiB", filepath.Join("..", "..", "wasm-examples", "c-echo", "echo.wasm"), items(1 << 20)},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb := newSandbox(t, sandbox.Config{PoolSize: 1})
			m := compile(t, sb, c.path)
			call := func(input string) sandbox.Reply {
				rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":` + input + `,"ctx":{"tenantId":"t","runId":"r"}}`)})
				if err != nil || rep.Status != 0 || string(rep.Body) != input {
					t.Fatalf("%d bytes in: status %d, %d bytes out, %v", len(input), rep.Status, len(rep.Body), err)
				}
				return rep
			}
			idle := call(`{}`).MemoryBytes
			for i := 0; i < 2; i++ {
				if got := call(c.input).MemoryBytes; got != idle {
					t.Fatalf("call %d: memory %d pages after the call, the snapshot's is %d: the call grew it", i, got>>16, idle>>16)
				}
			}
		})
	}
}
