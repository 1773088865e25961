package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// canaryCall asks the canary guest to check that the state it writes is
// gone, then to write it (and, with how, to end badly after writing).
func canaryCall(t *testing.T, m *sandbox.Module, how string) (sandbox.Reply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fuel := int64(50_000_000)
	if how == "deadline" { // spins until its deadline, with fuel to spare
		ctx, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		how, fuel = "spin", 0
	}
	return m.Call(ctx, sandbox.Request{Body: []byte(how), CallLimits: sandbox.CallLimits{Fuel: fuel}})
}

// eachResetMode runs test once per way a pool can reset an instance (the
// kernel's PAGEMAP_SCAN, /proc/self/pagemap, a whole copy, and the
// portable pool used where packd cannot map memory).
func eachResetMode(t *testing.T, test func(t *testing.T, mode string)) {
	for _, mode := range sandbox.ResetModes {
		t.Run(mode, func(t *testing.T) {
			defer sandbox.UseReset(mode)()
			test(t, mode)
		})
	}
}

// TestPooledInstancesArePristine: whatever a call writes (a global, a
// word on every page of memory), the next call on a pooled instance sees
// none of it, through every way a call can end (every one that is not ok
// discards its instance); under concurrency too; with every reset mode.
func TestPooledInstancesArePristine(t *testing.T) {
	eachResetMode(t, func(t *testing.T, _ string) {
		sb := newSandbox(t, sandbox.Config{PoolSize: 4, MaxResponseBytes: 1 << 20})
		m := compile(t, sb, hostile("canary"))
		for i, how := range []string{"ok", "ok", "trap", "ok", "exit", "ok", "spin", "ok", "deadline", "ok", "big", "ok", "grow", "ok", "grow", "grow", "ok", "ok"} {
			rep, err := canaryCall(t, m, how)
			switch how {
			case "ok", "grow": // grow answers, and its instance is set back to the snapshot's size
				if err != nil || string(rep.Body) != `{"dirty":false}` {
					t.Fatalf("call %d: %s %v", i, rep.Body, err)
				}
			default:
				if err == nil {
					t.Fatalf("call %d (%s) ended well: %s", i, how, rep.Body)
				}
			}
			if n := m.PoolInstances(); n > 4 {
				t.Fatalf("call %d (%s): %d instances live in a pool of 4", i, how, n)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep, err := canaryCall(t, m, "ok")
				if err != nil || string(rep.Body) != `{"dirty":false}` {
					errs <- fmt.Errorf("%s %v", rep.Body, err)
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

// TestResetCopiesBackOnlyWrittenPages: where the kernel says which pages
// a call wrote (PAGEMAP_SCAN, or /proc/self/pagemap before it), the reset
// copies back those and no others; the fallbacks compare every page with
// the snapshot and copy back those that differ.
func TestResetCopiesBackOnlyWrittenPages(t *testing.T) {
	eachResetMode(t, func(t *testing.T, mode string) {
		var mu sync.Mutex
		var pages []int
		var how []string
		sb := newSandbox(t, sandbox.Config{PoolSize: 1, PoolEvents: func(ev sandbox.PoolEvent) {
			if ev.Kind == "reset" {
				mu.Lock()
				pages, how = append(pages, ev.Pages), append(how, string(ev.Reason))
				mu.Unlock()
			}
		}})
		m := compile(t, sb, hostile("canary"))
		for i := 0; i < 3; i++ {
			if rep, err := canaryCall(t, m, "ok"); err != nil || string(rep.Body) != `{"dirty":false}` {
				t.Fatalf("call %d: %s %v", i, rep.Body, err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		// The canary writes a word on each of its 32 pages of 64 KiB, and
		// the request lands on one more page: 33 of its 512 pages of 4 KiB.
		if len(pages) != 3 {
			t.Fatalf("%d resets, want 3", len(pages))
		}
		// After the first, a reset may copy back the pages the last scan
		// found ("known": no page fault in the process since).
		want := map[string]string{"auto": "scan", "scan": "scan", "pagemap": "pagemap", "copy": "compare", "portable": "compare"}[mode]
		for i, n := range pages {
			asked := how[i] == want || mode == "auto" && how[i] == "pagemap" || i > 0 && want != "compare" && how[i] == "known"
			if n != 33 || !asked {
				t.Errorf("reset %d copied back %d pages found by %q, want 33 found by %q", i, n, how[i], want)
			}
		}
	})
}

// TestPooledGoGuest: the Go conformance pack answers from pooled
// instances, and its counter-like state does not carry over.
func TestPooledGoGuest(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 2})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm"))
	if !m.Pooled() {
		t.Fatal("the Go guest is not pooled")
	}
	for i := 0; i < 20; i++ {
		rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"m` + fmt.Sprint(i) + `"},"ctx":{"tenantId":"t","runId":"r"}}`)})
		if err != nil || string(rep.Body) != `{"message":"m`+fmt.Sprint(i)+`"}` {
			t.Fatalf("call %d: %s %v", i, rep.Body, err)
		}
	}
	rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"conformance.throws"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)})
	if err != nil || rep.Status != 1 {
		t.Fatalf("throws: %d %s %v", rep.Status, rep.Body, err)
	}
}

// TestAPooledGoEchoWritesFewPages: a pooled call of the Go echo example
// (a raw handler, guest.AnyRawTool) writes its stack and the page that
// holds its Context and request, and allocates nothing: each reset copies
// back at most 4 pages of 4 KiB (2 as built). With a handler answering
// any (guest.AnyTool), boxing its output allocated, and every call wrote
// 9; the registry's mutex was one more, the Context apart from the
// request another.
func TestAPooledGoEchoWritesFewPages(t *testing.T) {
	events, resets := resetPages()
	sb := newSandbox(t, sandbox.Config{PoolSize: 1, PoolEvents: events})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "echo", "echo.wasm"))
	for i := 0; i < 4; i++ {
		input := `{"message":"m` + fmt.Sprint(i) + `"}`
		rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"echo.message"},"input":` + input + `,"ctx":{"tenantId":"t","runId":"r"}}`)})
		if err != nil || rep.Status != 0 || string(rep.Body) != input {
			t.Fatalf("call %d: %d %s %v", i, rep.Status, rep.Body, err)
		}
	}
	pages := resets()
	if len(pages) != 4 {
		t.Fatalf("%d resets, want 4", len(pages))
	}
	for i, n := range pages {
		if n < 1 || n > 4 {
			t.Errorf("reset %d copied back %d pages, want 1 to 4", i, n)
		}
	}
}

// TestModulesThatWriteTablesAreNotPooled: the reset covers memory and
// globals only, so a module that can change a table is not pooled.
func TestModulesThatWriteTablesAreNotPooled(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 2})
	if m := compile(t, sb, hostile("tablegrow")); m.Pooled() {
		t.Fatal("a module with table.grow is pooled")
	}
	if m := compile(t, sb, hostile("canary")); !m.Pooled() {
		t.Fatal("the canary is not pooled")
	}
}

// TestPoolKeepsTheEnvironmentOfItsSnapshot: a Go guest reads its
// environment in _initialize, so a pool serves only calls with the
// environment its snapshot saw; another environment gets a fresh instance.
func TestPoolKeepsTheEnvironmentOfItsSnapshot(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 2})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm"))
	body := []byte(`{"kind":"invoke","tool":{"id":"conformance.process-env"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"A=1"}, `{"names":["A"]}`},
		{[]string{"A=1"}, `{"names":["A"]}`},
		{[]string{"B=2"}, `{"names":["B"]}`},
		{nil, `{"names":[]}`},
	} {
		rep, err := m.Call(context.Background(), sandbox.Request{Body: body, Env: c.env})
		if err != nil || string(rep.Body) != c.want {
			t.Fatalf("env %v: %s %v", c.env, rep.Body, err)
		}
	}
}

// TestIdleInstancesGiveBackTheirMemory: pooled instances hold their share
// of the memory budget while they wait; once idle long enough they close
// and give it back.
func TestIdleInstancesGiveBackTheirMemory(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 2})
	m := compile(t, sb, hostile("canary"))
	if _, err := canaryCall(t, m, "ok"); err != nil {
		t.Fatal(err)
	}
	if sb.MemoryInUse() == 0 {
		t.Fatal("the idle instance holds no memory")
	}
	sandbox.TrimPools(m, time.Now().Add(time.Second))
	if n := sb.MemoryInUse(); n != 0 {
		t.Fatalf("%d bytes held after the pool was trimmed", n)
	}
}

// TestFreshOptsOutOfThePool: a call that asks for a fresh instance gets
// one (it pays the Go runtime's initialisation again: many times the fuel
// of a pooled call).
func TestFreshOptsOutOfThePool(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 2})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm"))
	body := []byte(`{"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"m"},"ctx":{"tenantId":"t","runId":"r"}}`)
	var fuel [2]int64
	for i, fresh := range []bool{false, true} {
		for j := 0; j < 2; j++ { // the second pooled call is a hit
			rep, err := m.Call(context.Background(), sandbox.Request{Body: body, Fresh: fresh})
			if err != nil || string(rep.Body) != `{"message":"m"}` {
				t.Fatalf("fresh %v: %s %v", fresh, rep.Body, err)
			}
			fuel[i] = rep.FuelUsed
		}
	}
	if fuel[1] < 3*fuel[0] {
		t.Fatalf("a fresh call used %d fuel, a pooled one %d", fuel[1], fuel[0])
	}
}

// TestPoolEvents: what the pool does is told, for the metrics.
func TestPoolEvents(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	sb := newSandbox(t, sandbox.Config{PoolSize: 1, PoolEvents: func(ev sandbox.PoolEvent) {
		mu.Lock()
		defer mu.Unlock()
		seen[string(ev.Kind)+"/"+string(ev.Reason)]++
	}})
	m := compile(t, sb, hostile("canary"))
	// miss+reset, hit+reset, hit then discarded, miss+reset (its memory
	// grew: set back to the snapshot's size, TestAGrownInstanceIsResetAndKept
	// has the discards of the portable pool), hit+reset, then trimmed
	for _, how := range []string{"ok", "ok", "trap", "grow", "ok"} {
		_, _ = canaryCall(t, m, how)
	}
	sandbox.TrimPools(m, time.Now().Add(time.Second))
	mu.Lock()
	defer mu.Unlock()
	seen["reset/scan or known"] = seen["reset/scan"] + seen["reset/known"]
	want := map[string]int{"miss/": 2, "hit/": 3, "reset/scan or known": 4, "discard/error": 1, "discard/grown": 0, "discard/idle": 1}
	for k, n := range want {
		if seen[k] != n {
			t.Errorf("%s: %d, want %d (all: %v)", k, seen[k], n, seen)
		}
	}
}

// TestResetUndoesAHostWrittenCanary: after every pooled call the host
// writes a byte on every page and changes every global; the reset must
// undo all of it (every reset in this package's tests is also compared
// with the snapshot, byte for byte), for the canary guest and a Go guest.
func TestResetUndoesAHostWrittenCanary(t *testing.T) {
	eachResetMode(t, testResetUndoesAHostWrittenCanary)
}

func testResetUndoesAHostWrittenCanary(t *testing.T, _ string) {
	defer sandbox.CanaryAfterEveryCall()()
	sb := newSandbox(t, sandbox.Config{PoolSize: 2})
	canary := compile(t, sb, hostile("canary"))
	for i := 0; i < 20; i++ {
		if rep, err := canaryCall(t, canary, "ok"); err != nil || string(rep.Body) != `{"dirty":false}` {
			t.Fatalf("canary call %d: %s %v", i, rep.Body, err)
		}
	}
	goGuest := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm"))
	for i := 0; i < 20; i++ {
		rep, err := goGuest.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"m"},"ctx":{"tenantId":"t","runId":"r"}}`)})
		if err != nil || string(rep.Body) != `{"message":"m"}` {
			t.Fatalf("Go call %d: %s %v", i, rep.Body, err)
		}
	}
}

// TestSnapshotsAreTakenAnew: once a snapshot ages out, the next call takes
// a new one (its initialisation runs again) and the old instances go.
func TestSnapshotsAreTakenAnew(t *testing.T) {
	var mu sync.Mutex
	misses := 0
	sb := newSandbox(t, sandbox.Config{PoolSize: 2, PoolEvents: func(ev sandbox.PoolEvent) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind == "miss" {
			misses++
		}
	}})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm"))
	call := func() {
		rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"m"},"ctx":{"tenantId":"t","runId":"r"}}`)})
		if err != nil || string(rep.Body) != `{"message":"m"}` {
			t.Fatalf("%s %v", rep.Body, err)
		}
	}
	call()
	call()
	sandbox.ExpireSnapshot(m)
	call()
	call()
	mu.Lock()
	defer mu.Unlock()
	if misses != 2 {
		t.Fatalf("%d misses, want 2 (one per snapshot)", misses)
	}
}

// TestIdleInstancesNeverRefuseACall: memory held by idle pooled instances
// is given back when a call needs it, rather than the call being refused
// for want of memory.
func TestIdleInstancesNeverRefuseACall(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	sb := newSandbox(t, sandbox.Config{PoolSize: 4, MemoryBudget: 3 << 20, PoolEvents: func(ev sandbox.PoolEvent) {
		mu.Lock()
		defer mu.Unlock()
		seen[string(ev.Kind)+"/"+string(ev.Reason)]++
	}})
	a, b := compile(t, sb, hostile("canary")), compile(t, sb, hostile("canary"))
	for i, m := range []*sandbox.Module{a, b, a, b} { // 2 MiB each: one fits at a time
		if rep, err := canaryCall(t, m, "ok"); err != nil || string(rep.Body) != `{"dirty":false}` {
			t.Fatalf("call %d: %s %v", i, rep.Body, err)
		}
		if a.PoolInstances()+b.PoolInstances() != 1 {
			t.Fatalf("call %d: %d and %d instances live", i, a.PoolInstances(), b.PoolInstances())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["discard/memory"] != 3 {
		t.Fatalf("%d instances closed for memory, want 3 (all: %v)", seen["discard/memory"], seen)
	}
}

// goCanaryCall calls the Go canary pack (testdata/gocanary) as a tenant.
func goCanaryCall(m *sandbox.Module, tenant, input string) (string, error) {
	rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"canary.keep"},"input":` + input + `,"ctx":{"tenantId":"` + tenant + `","runId":"r"}}`)})
	if err == nil && rep.Status != 0 {
		err = fmt.Errorf("status %d: %s", rep.Status, rep.Body)
	}
	return string(rep.Body), err
}

const goCanaryClean = `{"last":null,"tenants":[],"heap":0,"queued":0,"env":""}`

// TestGoCanaryFindsNothing: a Go pack that keeps every input and tenant
// it is given (in a variable, a map, the heap, a channel, its environment)
// finds nothing of any earlier call, whichever tenant made it, one call
// after another and many at once, with every reset mode.
func TestGoCanaryFindsNothing(t *testing.T) {
	eachResetMode(t, func(t *testing.T, _ string) {
		var hits atomic.Int64
		sb := newSandbox(t, sandbox.Config{PoolSize: 4, PoolEvents: func(ev sandbox.PoolEvent) {
			if ev.Kind == "hit" {
				hits.Add(1)
			}
		}})
		m := compile(t, sb, filepath.Join("..", "..", "testdata", "gocanary", "gocanary.wasm"))
		if !m.Pooled() {
			t.Fatal("the Go canary is not pooled")
		}
		for i := 0; i < 6; i++ {
			got, err := goCanaryCall(m, fmt.Sprint("tenant-", i%2), fmt.Sprintf(`{"secret":"s%d"}`, i))
			if err != nil || got != goCanaryClean {
				t.Fatalf("call %d found %s (%v)", i, got, err)
			}
		}
		// Its calls allocate, within the heap the SDK keeps free: the
		// memory does not grow, and one instance serves them all.
		if hits.Load() != 5 {
			t.Fatalf("%d of 6 calls reused an instance, want 5", hits.Load())
		}
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for i := 0; i < 32; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got, err := goCanaryCall(m, fmt.Sprint("tenant-", i%3), fmt.Sprintf(`{"secret":"c%d"}`, i)); err != nil || got != goCanaryClean {
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

// TestGoCanaryCatchesABrokenReset: the canary is not blind. With resets
// broken, the second call on an instance finds the first one's input and
// a tenant kept by it. (That tenant reads "tenant-b": in a module the
// SDK's strings share the request buffer, which packd's reset would have
// put back and the second request overwrote instead.)
func TestGoCanaryCatchesABrokenReset(t *testing.T) {
	defer sandbox.BreakResets()()
	sb := newSandbox(t, sandbox.Config{PoolSize: 1})
	m := compile(t, sb, filepath.Join("..", "..", "testdata", "gocanary", "gocanary.wasm"))
	if _, err := goCanaryCall(m, "tenant-a", `{"secret":"a"}`); err != nil {
		t.Fatal(err)
	}
	got, err := goCanaryCall(m, "tenant-b", `{"secret":"b"}`)
	want := `{"last":{"secret":"a"},"tenants":["tenant-b"],"heap":14,"queued":1,"env":"{\"secret\":\"a\"}"}`
	if err != nil || got != want {
		t.Fatalf("with resets broken the second call found %s (%v), want %s", got, err, want)
	}
}

// TestInstancesMadeDuringTheSnapshotMapIt: calls that arrive together,
// before the snapshot exists, all end up on instances that map its image,
// so every reset asks the kernel which pages were written (none compares
// the whole memory).
func TestInstancesMadeDuringTheSnapshotMapIt(t *testing.T) {
	var mu sync.Mutex
	how := map[string]int{}
	sb := newSandbox(t, sandbox.Config{PoolSize: 8, PoolEvents: func(ev sandbox.PoolEvent) {
		if ev.Kind == "reset" {
			mu.Lock()
			how[string(ev.Reason)]++
			mu.Unlock()
		}
	}})
	m := compile(t, sb, filepath.Join("..", "..", "testdata", "gocanary", "gocanary.wasm"))
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := goCanaryCall(m, "t", `{"a":1}`); err != nil || got != goCanaryClean {
				t.Errorf("%s %v", got, err)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if how["compare"] != 0 || how["scan"]+how["pagemap"] != 8 {
		t.Fatalf("resets: %v, want 8 that asked the kernel", how)
	}
	// The calls that came while the snapshot was being taken waited for it:
	// at most 8 instances serve the calls (fewer if a call came late enough
	// to find one idle), the one that took the snapshot among them. Made
	// alongside the snapshot, an instance could not map the image and was
	// thrown away (14 to 16 made before).
	if n := sandbox.InstancesMade(m); n > 8 {
		t.Fatalf("%d instances made for 8 concurrent first calls, want at most 8", n)
	}
}

// TestAPoolsFirstCallInstantiatesOnce: the instance that takes the
// snapshot serves the first call, its memory mapped onto the snapshot's
// image, so its resets ask the kernel for the pages written, and the calls
// after it find a clean instance. On main the first call instantiated
// twice: the taker was closed for one that mapped the image.
func TestAPoolsFirstCallInstantiatesOnce(t *testing.T) {
	var mu sync.Mutex
	var resets []string
	sb := newSandbox(t, sandbox.Config{PoolSize: 2, PoolEvents: func(ev sandbox.PoolEvent) {
		if ev.Kind == "reset" {
			mu.Lock()
			resets = append(resets, string(ev.Reason))
			mu.Unlock()
		}
	}})
	m := compile(t, sb, filepath.Join("..", "..", "testdata", "gocanary", "gocanary.wasm"))
	if got, err := goCanaryCall(m, "t", `{"a":1}`); err != nil || got != goCanaryClean {
		t.Fatalf("first call: %s %v", got, err)
	}
	if n := sandbox.InstancesMade(m); n != 1 {
		t.Fatalf("the first call made %d instances, want 1", n)
	}
	for i := 0; i < 3; i++ {
		if got, err := goCanaryCall(m, "t", `{"a":1}`); err != nil || got != goCanaryClean {
			t.Fatalf("call %d after the first: %s %v", i, got, err)
		}
	}
	if n := sandbox.InstancesMade(m); n != 1 {
		t.Fatalf("four calls one after another made %d instances, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(resets) < 3 {
		t.Fatalf("resets %v after four calls", resets)
	}
	for _, how := range resets {
		if how != "scan" && how != "pagemap" && how != "known" {
			t.Fatalf("resets %v: the first instance's memory is not a mapping of the image", resets)
		}
	}
}

// TestCallsWaitingForTheSnapshotKeepTheirOwnLimits: a pack whose
// _initialize never ends holds the snapshot for as long as the call
// taking it may run (Config.LoadTimeout); the calls that came meanwhile
// wait for it only until their own deadline or cancellation, and each
// says so, while the taker is still running.
func TestCallsWaitingForTheSnapshotKeepTheirOwnLimits(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 4, LoadTimeout: time.Minute, LoadFuel: sandbox.MaxFuel})
	m := compile(t, sb, hostile("initspin"))
	takerCtx, stopTaker := context.WithCancel(context.Background())
	defer stopTaker()
	takerDone := make(chan error, 1)
	go func() {
		_, err := m.Call(takerCtx, sandbox.Request{Body: []byte(`{}`)})
		takerDone <- err
	}()
	// The taker has made its instance (and holds the snapshot) before it
	// runs _initialize.
	for i := 0; sandbox.InstancesMade(m) == 0; i++ {
		if i == 1000 {
			t.Fatal("the first call made no instance in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// callWithin is a call's error, or a failure when it does not return
	// within 10 s (the taker would hold it for a minute).
	callWithin := func(ctx context.Context) error {
		done := make(chan error, 1)
		go func() {
			_, err := m.Call(ctx, sandbox.Request{Body: []byte(`{}`)})
			done <- err
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("a call waiting for the snapshot did not return within 10 s")
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := callWithin(ctx); !errors.Is(err, sandbox.ErrDeadline) || !strings.Contains(err.Error(), "waiting for its snapshot") {
		t.Fatalf("a call past its deadline while the snapshot is taken: %v, want %v waiting for its snapshot", err, sandbox.ErrDeadline)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := callWithin(ctx); !errors.Is(err, sandbox.ErrCancelled) {
		t.Fatalf("a call cancelled while the snapshot is taken: %v, want %v", err, sandbox.ErrCancelled)
	}
	select {
	case err := <-takerDone:
		t.Fatalf("the call taking the snapshot ended before its limits: %v", err)
	default:
	}
	if n := sandbox.InstancesMade(m); n != 1 {
		t.Fatalf("%d instances made, want the taker's only", n)
	}

	stopTaker()
	select {
	case err := <-takerDone:
		if !errors.Is(err, sandbox.ErrCancelled) {
			t.Fatalf("the taker, cancelled in _initialize: %v, want %v", err, sandbox.ErrCancelled)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the taker did not stop within 10 s of its cancellation")
	}
	// The next call takes the snapshot itself, and is held to its limits.
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := m.Call(ctx, sandbox.Request{Body: []byte(`{}`)}); !errors.Is(err, sandbox.ErrDeadline) {
		t.Fatalf("the next call, which runs _initialize itself: %v, want %v", err, sandbox.ErrDeadline)
	}
}

// TestACallWritingANewPageIsCaught: steady calls that write the same
// pages are reset from what the last scan found ("known", no question to
// the kernel); a call that writes a page no earlier call wrote takes a
// page fault, and its reset scans again and restores that page too. The
// next call sees nothing of either; every reset is also compared with the
// whole snapshot (the package's tests set verifyResets).
func TestACallWritingANewPageIsCaught(t *testing.T) {
	eachResetMode(t, func(t *testing.T, mode string) {
		var mu sync.Mutex
		var hows []string
		sb := newSandbox(t, sandbox.Config{PoolSize: 1, PoolEvents: func(ev sandbox.PoolEvent) {
			if ev.Kind == "reset" {
				mu.Lock()
				hows = append(hows, string(ev.Reason))
				mu.Unlock()
			}
		}})
		m := compile(t, sb, hostile("roam"))
		roam := func(page byte) string {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rep, err := m.Call(ctx, sandbox.Request{Body: []byte{page}})
			if err != nil {
				t.Fatalf("page %d: %v", page, err)
			}
			return string(rep.Body)
		}
		lastHow := func() string {
			mu.Lock()
			defer mu.Unlock()
			return hows[len(hows)-1]
		}
		// Any page fault of the process makes the next reset scan: the
		// Go runtime's own (its scavenger giving back what earlier tests
		// held, then the heap touching it again) among them. What earlier
		// tests left is given back now, and the steady calls go on until
		// one reset trusted the last scan (or 300 calls: the check below
		// then fails).
		debug.FreeOSMemory()
		sawKnown := func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(hows, "known")
		}
		for i := 0; i < 20 || i < 300 && mode != "copy" && mode != "portable" && !sawKnown(); i++ {
			if got := roam(5); got != `{"dirty":false}` {
				t.Fatalf("call %d on page 5: %s", i, got)
			}
		}
		for _, page := range []byte{200, 17, 255, 5, 1} {
			if got := roam(page); got != `{"dirty":false}` {
				t.Fatalf("page %d: %s", page, got)
			}
			if lastHow() == "known" && page != 5 {
				t.Fatalf("the reset after a call wrote page %d, new, trusted the last scan", page)
			}
		}
		if got := roam(5); got != `{"dirty":false}` {
			t.Fatalf("after the new pages: %s", got)
		}
		mu.Lock()
		defer mu.Unlock()
		known := 0
		for _, how := range hows {
			if how == "known" {
				known++
			}
		}
		// (Under the race detector, reading /proc/self/pagemap faults, so
		// that mode never takes the shortcut: raceBuild.)
		raceOnPagemap := sandbox.RaceBuild && slices.Contains(hows, "pagemap")
		if !raceOnPagemap && (mode == "copy" || mode == "portable") != (known == 0) {
			t.Fatalf("%d of %d resets copied back the pages the last scan found (%v)", known, len(hows), hows)
		}
	})
}

// TestPoolServesTheInstanceUsedLast: after a burst that made four
// instances, steady calls one at a time keep using the same one (warm in
// the CPU's caches), so the other three sit idle and the janitor closes
// them: a pool shrinks back under light traffic, not only without any.
func TestPoolServesTheInstanceUsedLast(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 4})
	m := compile(t, sb, hostile("canary"))
	burst := time.Now()
	sandbox.SetPoolClock(m, burst)
	if err := sandbox.FillPool(m, 4); err != nil {
		t.Fatal(err)
	}
	sandbox.SetPoolClock(m, burst.Add(time.Minute))
	for i := 0; i < 10; i++ {
		if rep, err := canaryCall(t, m, "ok"); err != nil || string(rep.Body) != `{"dirty":false}` {
			t.Fatalf("call %d: %s %v", i, rep.Body, err)
		}
	}
	if n := m.PoolInstances(); n != 4 {
		t.Fatalf("%d instances before the trim, want 4", n)
	}
	sandbox.TrimPools(m, burst.Add(time.Second))
	if n := m.PoolInstances(); n != 1 {
		t.Fatalf("%d instances after the trim, want the 1 the calls used", n)
	}
}

// TestASharedBudgetBoundsBothSandboxes: a sandbox loaded to replace
// another (Config.ShareBudgetOf) counts in the other's memory budget: a
// module that does not fit is refused in either, and the idle pooled
// instances of the older one are closed when the newer one wants memory,
// so that the two together never hold more than the budget.
func TestASharedBudgetBoundsBothSandboxes(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	count := func(ev sandbox.PoolEvent) {
		mu.Lock()
		defer mu.Unlock()
		seen[string(ev.Kind)+"/"+string(ev.Reason)]++
	}
	old := newSandbox(t, sandbox.Config{PoolSize: 4, MemoryBudget: 3 << 20, PoolEvents: count})
	repl := newSandbox(t, sandbox.Config{PoolSize: 4, ShareBudgetOf: old, PoolEvents: count})
	if repl.MemoryBudget() != 3<<20 {
		t.Fatalf("the replacement's budget is %d bytes, want the old one's", repl.MemoryBudget())
	}
	if _, err := callFuel(t, compile(t, repl, hostile("fill")), 0, time.Minute); !errors.Is(err, sandbox.ErrMemoryBudget) {
		t.Fatalf("a 16 MiB module in the replacement of a sandbox with a 3 MiB budget: %v", err)
	}
	a, b := compile(t, old, hostile("canary")), compile(t, repl, hostile("canary"))
	for i, m := range []*sandbox.Module{a, b, a, b} { // 2 MiB each: one fits at a time
		if rep, err := canaryCall(t, m, "ok"); err != nil || string(rep.Body) != `{"dirty":false}` {
			t.Fatalf("call %d: %s %v", i, rep.Body, err)
		}
		if a.PoolInstances()+b.PoolInstances() != 1 || old.MemoryInUse() != repl.MemoryInUse() || old.MemoryInUse() > 3<<20 {
			t.Fatalf("call %d: %d and %d instances live, %d and %d bytes counted", i, a.PoolInstances(), b.PoolInstances(), old.MemoryInUse(), repl.MemoryInUse())
		}
	}
	mu.Lock()
	if seen["discard/memory"] != 3 {
		t.Fatalf("%d instances closed for memory, want 3 (all: %v)", seen["discard/memory"], seen)
	}
	mu.Unlock()
	// The old one closes (its last call done): the replacement goes on in
	// the same budget, and what the old one held is given back.
	if err := old.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rep, err := canaryCall(t, b, "ok"); err != nil || string(rep.Body) != `{"dirty":false}` {
		t.Fatalf("after the old sandbox closed: %s %v", rep.Body, err)
	}
	if n := repl.MemoryInUse(); n != 2<<20 {
		t.Fatalf("%d bytes counted with one idle 2 MiB instance left", n)
	}
}

// TestReplySaysWhatTheCallRanIn: a call's reply says whether it ran in an
// idle pooled instance, one made for it and pooled, or a fresh one, and
// how long the pooled instance's reset took after it.
func TestReplySaysWhatTheCallRanIn(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 1}), hostile("canary"))
	sandbox.ExpireSnapshot(m) // no warm instance: the first call makes one
	for i, want := range []string{sandbox.InstanceMiss, sandbox.InstanceHit} {
		rep, err := canaryCall(t, m, "ok")
		if err != nil || rep.Instance != want || rep.ResetSeconds <= 0 {
			t.Fatalf("call %d: instance %q (want %q), reset %v s, %v", i, rep.Instance, want, rep.ResetSeconds, err)
		}
	}
	rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte("ok"), Fresh: true})
	if err != nil || rep.Instance != sandbox.InstanceFresh || rep.ResetSeconds != 0 {
		t.Fatalf("a fresh call: instance %q, reset %v s, %v", rep.Instance, rep.ResetSeconds, err)
	}
}
