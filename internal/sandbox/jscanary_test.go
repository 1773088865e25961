package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kindgi/packd/internal/sandbox"
)

var jsCanary = filepath.Join("..", "..", "testdata", "jscanary", "canary.wasm")

// jsCanaryCall calls the TypeScript canary pack (testdata/jscanary) as a
// tenant.
func jsCanaryCall(m *sandbox.Module, tenant, input string) (string, error) {
	rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"canary.keep"},"input":` + input + `,"ctx":{"tenantId":"` + tenant + `","runId":"r"}}`)})
	if err == nil && rep.Status != 0 {
		err = fmt.Errorf("status %d: %s", rep.Status, rep.Body)
	}
	return string(rep.Body), err
}

const jsCanaryClean = `{"last":null,"tenants":[],"heap":0,"jobs":0,"env":"","global":null}`

// TestJSCanaryFindsNothing: a JavaScript pack that keeps every input and
// tenant it is given (a module variable, a Set, the heap, a global,
// process.env, jobs and timers left behind) finds nothing of any earlier
// call, one call after another and many at once, with every reset mode;
// and its calls pool (one instance serves calls one after another).
func TestJSCanaryFindsNothing(t *testing.T) {
	eachResetMode(t, func(t *testing.T, _ string) {
		var hits atomic.Int64
		sb := newSandbox(t, sandbox.Config{PoolSize: 4, PoolEvents: func(ev sandbox.PoolEvent) {
			if ev.Kind == "hit" {
				hits.Add(1)
			}
		}})
		m := compile(t, sb, jsCanary)
		if !m.Pooled() {
			t.Fatal("the JavaScript canary is not pooled")
		}
		for i := 0; i < 6; i++ {
			got, err := jsCanaryCall(m, fmt.Sprint("tenant-", i%2), fmt.Sprintf(`{"secret":"s%d"}`, i))
			if err != nil || got != jsCanaryClean {
				t.Fatalf("call %d found %s (%v)", i, got, err)
			}
		}
		if hits.Load() != 5 {
			t.Fatalf("%d of 6 calls reused an instance, want 5", hits.Load())
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got, err := jsCanaryCall(m, fmt.Sprint("tenant-", i%3), fmt.Sprintf(`{"secret":"c%d"}`, i)); err != nil || got != jsCanaryClean {
					errs <- fmt.Errorf("concurrent call %d found %s (%v)", i, got, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestJSCanaryCatchesABrokenReset: the canary is not blind. With resets
// broken, the second call on an instance finds the first one's input,
// tenant, heap, environment, global and the job it queued.
func TestJSCanaryCatchesABrokenReset(t *testing.T) {
	defer sandbox.BreakResets()()
	sb := newSandbox(t, sandbox.Config{PoolSize: 1})
	m := compile(t, sb, jsCanary)
	if _, err := jsCanaryCall(m, "tenant-a", `{"secret":"a"}`); err != nil {
		t.Fatal(err)
	}
	got, err := jsCanaryCall(m, "tenant-b", `{"secret":"b"}`)
	want := `{"last":{"secret":"a"},"tenants":["tenant-a"],"heap":1,"jobs":1,"env":"{\"secret\":\"a\"}","global":{"secret":"a"}}`
	if err != nil || got != want {
		t.Fatalf("with resets broken the second call found %s (%v), want %s", got, err, want)
	}
}

// TestJSCallsBurnTheSameFuel: a JavaScript call's fuel is deterministic,
// pooled (from the snapshot) and fresh (the runtime's start and the pack's
// top level again), and a pooled call does not pay the load.
func TestJSCallsBurnTheSameFuel(t *testing.T) {
	fuel := map[int][]int64{}
	for _, pool := range []int{0, 1} {
		sb := newSandbox(t, sandbox.Config{PoolSize: pool})
		m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "ts-echo", "echo.wasm"))
		for i := 0; i < 4; i++ {
			rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":"hi"},"ctx":{"tenantId":"t","runId":"r"}}`)})
			if err != nil || string(rep.Body) != `{"message":"hi"}` {
				t.Fatalf("pool %d call %d: %s %v", pool, i, rep.Body, err)
			}
			fuel[pool] = append(fuel[pool], rep.FuelUsed)
		}
	}
	for pool, f := range fuel {
		for _, x := range f {
			if x != f[0] {
				t.Fatalf("pool %d: fuel per call %v", pool, f)
			}
		}
	}
	if fuel[1][0]*20 > fuel[0][0] {
		t.Fatalf("a pooled call burns %d, a fresh one %d: the pooled one should not pay the load", fuel[1][0], fuel[0][0])
	}
}

// TestZodSchemasAreWarmInTheSnapshot: zod builds what it keeps of a schema
// on its first parse; the SDK parses a sample at load, so a pooled call of
// a tool with a zod input (ts-conformance's echo) does not build it again:
// zod's parse adds under 600,000 fuel to what the JSON Schema echo burns
// (about 400,000; 1,200,000 when every call built it).
func TestZodSchemasAreWarmInTheSnapshot(t *testing.T) {
	fuel := func(path, id string) int64 {
		sb := newSandbox(t, sandbox.Config{PoolSize: 1})
		m := compile(t, sb, path)
		var used int64
		for i := 0; i < 2; i++ { // the second call runs on the pooled instance
			rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"` + id + `"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`)})
			if err != nil || string(rep.Body) != `{"message":"hello"}` {
				t.Fatalf("%s: %s %v", id, rep.Body, err)
			}
			used = rep.FuelUsed
		}
		return used
	}
	zod := fuel(filepath.Join("..", "..", "wasm-examples", "ts-conformance", "conformance.wasm"), "conformance.echo")
	plain := fuel(filepath.Join("..", "..", "wasm-examples", "ts-echo", "echo.wasm"), "echo.message")
	if zod-plain > 600_000 {
		t.Fatalf("a zod echo burns %d, the JSON Schema echo %d", zod, plain)
	}
}

// TestJSMathRandomIsEveryCallsOwn: Math.random in pooled JavaScript calls
// draws numbers of each call's own, for two calls of one tenant and for
// two tenants, not what the snapshot's seed gave (QuickJS seeds it when
// _initialize makes the context, so every call drew the same sequence and
// one tenant could predict another's); and a recorded call replays to the
// same numbers (the seed is on its tape).
func TestJSMathRandomIsEveryCallsOwn(t *testing.T) {
	checkOwnDraws(t, compile(t, newSandbox(t, sandbox.Config{PoolSize: 1}), jsCanary))
}

// checkOwnDraws calls a canary's canary.random (atInit: a number drawn
// when the pack loaded, which the snapshot holds; draws: two drawn by the
// call) on a pooled module: every call, of one tenant or another, draws
// numbers of its own, none the snapshot's; and a recorded call replays to
// the same numbers (the seed is on its tape).
func checkOwnDraws(t *testing.T, m *sandbox.Module) {
	t.Helper()
	call := func(tenant string, tape, replay *sandbox.Tape) string {
		t.Helper()
		rep, err := m.Call(context.Background(), sandbox.Request{Record: tape, Replay: replay,
			Body: []byte(`{"kind":"invoke","tool":{"id":"canary.random"},"input":{},"ctx":{"tenantId":"` + tenant + `","runId":"r"}}`)})
		if err != nil || rep.Status != 0 {
			t.Fatalf("status %d: %s (%v)", rep.Status, rep.Body, err)
		}
		return string(rep.Body)
	}
	type draws struct {
		AtInit float64    `json:"atInit"`
		Draws  [2]float64 `json:"draws"`
	}
	seen := map[float64]string{}
	for i, tenant := range []string{"a", "a", "b", "b"} {
		var d draws
		body := call(tenant, nil, nil)
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err)
		}
		for _, r := range d.Draws {
			if r < 0 || r >= 1 || r == d.AtInit {
				t.Fatalf("call %d drew %v (the snapshot's draw %v)", i, r, d.AtInit)
			}
			if prev, ok := seen[r]; ok {
				t.Fatalf("call %d (tenant %s) drew %v, as %s did", i, tenant, r, prev)
			}
			seen[r] = fmt.Sprintf("call %d (tenant %s)", i, tenant)
		}
	}
	tape := &sandbox.Tape{}
	recorded := call("a", tape, nil)
	tape.Rewind()
	if replayed := call("a", nil, tape); replayed != recorded || len(tape.Answers) == 0 {
		t.Fatalf("replayed %s, recorded %s (%d answers)", replayed, recorded, len(tape.Answers))
	}
}
