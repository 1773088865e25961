package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kindgi/packd/internal/sandbox"
)

// The Python canary (testdata/pycanary, built by make with packd
// build-py) and what each of its calls must find.
var pyCanary = filepath.Join("..", "..", "testdata", "pycanary", "canary.wasm")

const pyCanaryClean = `{"last":null,"tenants":[],"heap":0,"env":"","modules":false,"builtins":null,"klass":null,"cycles":0,"gen":0}`

// pyCall calls tool id of a Python pack as a tenant.
func pyCall(m *sandbox.Module, id, tenant, input string, tape, replay *sandbox.Tape) (sandbox.Reply, error) {
	rep, err := m.Call(context.Background(), sandbox.Request{Record: tape, Replay: replay,
		Body: []byte(`{"kind":"invoke","tool":{"id":"` + id + `"},"input":` + input + `,"ctx":{"tenantId":"` + tenant + `","runId":"r"}}`)})
	if err == nil && rep.Status != 0 {
		err = fmt.Errorf("status %d: %s", rep.Status, rep.Body)
	}
	return rep, err
}

// TestPyCanaryFindsNothing: a Python pack that keeps every input and
// tenant it is given (a module global, a set, the heap, os.environ,
// sys.modules, builtins, a class attribute, a cycle for the collector, a
// half-run generator) finds nothing of any earlier call, one call after
// another and many at once, with every reset mode; and its calls pool.
func TestPyCanaryFindsNothing(t *testing.T) {
	eachResetMode(t, func(t *testing.T, _ string) {
		var hits atomic.Int64
		sb := newSandbox(t, sandbox.Config{PoolSize: 4, PoolEvents: func(ev sandbox.PoolEvent) {
			if ev.Kind == "hit" {
				hits.Add(1)
			}
		}})
		m := compile(t, sb, pyCanary)
		if !m.Pooled() {
			t.Fatal("the Python canary is not pooled")
		}
		for i := 0; i < 6; i++ {
			rep, err := pyCall(m, "canary.keep", fmt.Sprint("tenant-", i%2), fmt.Sprintf(`{"secret":"s%d"}`, i), nil, nil)
			if err != nil || string(rep.Body) != pyCanaryClean {
				t.Fatalf("call %d found %s (%v)", i, rep.Body, err)
			}
		}
		if hits.Load() != 5 {
			t.Fatalf("%d of 6 calls reused an instance, want 5", hits.Load())
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if rep, err := pyCall(m, "canary.keep", fmt.Sprint("tenant-", i%3), fmt.Sprintf(`{"secret":"c%d"}`, i), nil, nil); err != nil || string(rep.Body) != pyCanaryClean {
					errs <- fmt.Errorf("concurrent call %d found %s (%v)", i, rep.Body, err)
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

// TestPyCanaryCatchesABrokenReset: the canary is not blind. With resets
// broken, the second call on an instance finds the first one's input and
// tenant in every place it kept them.
func TestPyCanaryCatchesABrokenReset(t *testing.T) {
	defer sandbox.BreakResets()()
	m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 1}), pyCanary)
	if _, err := pyCall(m, "canary.keep", "tenant-a", `{"secret":"a"}`, nil, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := pyCall(m, "canary.keep", "tenant-b", `{"secret":"b"}`, nil, nil)
	want := `{"last":{"secret":"a"},"tenants":["tenant-a"],"heap":1,"env":"{'secret': 'a'}","modules":true,"builtins":{"secret":"a"},"klass":{"secret":"a"},"cycles":1,"gen":1}`
	if err != nil || string(rep.Body) != want {
		t.Fatalf("with resets broken the second call found %s (%v), want %s", rep.Body, err, want)
	}
}

// TestPyCallsBurnTheSameFuel: a pooled Python call's fuel is
// deterministic (it starts from the snapshot), and it does not pay
// CPython's start and the pack's import, which a fresh instance does. A
// fresh instance's fuel varies by a few tenths of a percent: CPython draws
// its string hash secret when it starts (random_get), and dicts of other
// hashes take other work.
func TestPyCallsBurnTheSameFuel(t *testing.T) {
	fuel := map[int][]int64{}
	for _, pool := range []int{0, 1} {
		m := compile(t, newSandbox(t, sandbox.Config{PoolSize: pool}), filepath.Join("..", "..", "wasm-examples", "py-echo", "echo.wasm"))
		for i := 0; i < 1+2*pool; i++ { // a fresh call starts CPython: one is enough
			rep, err := pyCall(m, "echo.message", "t", `{"message":"hi"}`, nil, nil)
			if err != nil || string(rep.Body) != `{"message":"hi"}` {
				t.Fatalf("pool %d call %d: %s %v", pool, i, rep.Body, err)
			}
			fuel[pool] = append(fuel[pool], rep.FuelUsed)
		}
	}
	for _, x := range fuel[1] {
		if x != fuel[1][0] {
			t.Fatalf("pooled: fuel per call %v", fuel[1])
		}
	}
	if fuel[1][0]*20 > fuel[0][0] {
		t.Fatalf("a pooled call burns %d, a fresh one %d: the pooled one should not pay the start", fuel[1][0], fuel[0][0])
	}
}

// TestPyRandomIsEveryCallsOwn: random in pooled Python calls draws numbers
// of each call's own, for two calls of one tenant and for two tenants, not
// the sequence of the seed drawn when the pack loaded (which the snapshot
// holds); and a recorded call replays to the same numbers.
func TestPyRandomIsEveryCallsOwn(t *testing.T) {
	checkOwnDraws(t, compile(t, newSandbox(t, sandbox.Config{PoolSize: 1}), pyCanary))
}

// TestPyThrowNamesThePacksLines: an exception a handler raises answers
// status 1 with its type, its words and a traceback that names the pack's
// file, line and source text.
func TestPyThrowNamesThePacksLines(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 1}), pyCanary)
	for i := 0; i < 2; i++ { // fresh from the snapshot, then pooled
		rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"canary.throw"},"input":{"n":7},"ctx":{"tenantId":"t","runId":"r"}}`)})
		if err != nil || rep.Status != 1 {
			t.Fatalf("status %d: %s (%v)", rep.Status, rep.Body, err)
		}
		var thrown struct{ Name, Message, Stack string }
		if err := json.Unmarshal(rep.Body, &thrown); err != nil {
			t.Fatal(err)
		}
		if thrown.Name != "ValueError" || thrown.Message != "boom 7" ||
			!strings.Contains(thrown.Stack, "File \"canary.py\", line 82, in throw\n    raise ValueError(\"boom \" + str(input.get(\"n\")))\nValueError: boom 7") {
			t.Fatalf("thrown %+v", thrown)
		}
	}
}
