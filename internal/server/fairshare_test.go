package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

// TestATenantCannotTakeTheWholeCap: with a cap of four (a reserve of
// one), tenant B calling and tenant A then holding every call it can in
// conformance.hold, A holds three (what B leaves idle) and B's next call
// is answered at once beside them (on main A took all four slots and B
// got 503 overloaded; then A was held to two while the cap had room).
func TestATenantCannotTakeTheWholeCap(t *testing.T) {
	_, ts := servedPack(t, conformanceIndex, host.SandboxConfig{}, service.Config{MaxConcurrency: 4, TenantSharePause: time.Millisecond}, Config{})
	post := func(tenant, tool, input string) (int, string, time.Duration) {
		return invokeAs(t, ts, tenant, tool, input)
	}
	if status, body, _ := post("B", "conformance.echo", `{"message":"alone"}`); status != 200 {
		t.Fatalf("B alone: %d %s", status, body)
	}
	var wg sync.WaitGroup
	statuses := make(chan int, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, _ := post("A", "conformance.hold", `{"release":"r","ms":1500}`)
			statuses <- status
		}()
	}
	time.Sleep(500 * time.Millisecond) // A's calls hold what they were given
	if status, body, took := post("B", "conformance.echo", `{"message":"beside A"}`); status != 200 || body != `{"v":2,"kind":"result","output":{"message":"beside A"}}` || took > 500*time.Millisecond {
		t.Errorf("B beside A's flood: %d %s after %v", status, body, took)
	}
	wg.Wait()
	close(statuses)
	held := 0
	for st := range statuses {
		if st == 200 {
			held++
		}
	}
	if held != 3 {
		t.Errorf("A held %d of the 4 slots, want the 3 beyond the reserve", held)
	}
}

// TestATenantCannotTakeTheWholeMemoryBudget: with a memory budget of
// 1,600 MiB (a reserve of 200) and hostile.hog (192 MiB, held for a
// second), tenant B calling and tenant A then holding eight hogs at once,
// A gets seven (1,344 MiB, within the budget less the reserve; the eighth
// is refused its grow) and B's hog beside them gets its memory at once.
// Before, A was held to its share of 800 MiB (four hogs) with half the
// budget idle; and a tenant alone in the window could take all of it, so
// that a newcomer's memory.grow returned -1 ("out of memory").
func TestATenantCannotTakeTheWholeMemoryBudget(t *testing.T) {
	dir := t.TempDir()
	hog, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "hog.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	index := `{"v":1,"packId":"mem","packVersion":"1.0.0","artifactVersion":"mem-1","publishedAt":"2026-11-30T00:00:00.000Z",
		"tools":[{"id":"hostile.hog","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"hog.wasm"}],
		"guardrails":[],"agents":[],"flows":[]}`
	if err := os.WriteFile(filepath.Join(dir, "hog.wasm"), hog, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ts := servedPack(t, filepath.Join(dir, "index.json"), host.SandboxConfig{CacheDir: filepath.Join(dir, "cache"), MemoryBudget: 1600 << 20, PoolSize: 8},
		service.Config{MaxConcurrency: 16}, Config{})
	hogFor := func(tenant string) string {
		status, body, _ := invokeAs(t, ts, tenant, "hostile.hog", "{}")
		return fmt.Sprintf("%d %s", status, body)
	}
	const fed = `200 {"v":2,"kind":"result","output":{}}`
	if got := hogFor("B"); got != fed {
		t.Fatalf("B alone: %s", got)
	}
	var wg sync.WaitGroup
	a := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a <- hogFor("A")
		}()
	}
	time.Sleep(500 * time.Millisecond) // A's hogs hold what they were given
	if got := hogFor("B"); got != fed {
		t.Errorf("B beside A's hogs: %s", got)
	}
	wg.Wait()
	close(a)
	var answers []string
	for got := range a {
		answers = append(answers, got)
	}
	sort.Strings(answers)
	if len(answers) != 8 || answers[1] != fed || !strings.Contains(answers[0], "out of memory") {
		t.Errorf("A's eight hogs: %q, want seven fed and one out of memory", answers)
	}
}

// TestARefusalForTheShareWaitsWithoutASlot: a call refused for its
// tenant's share is answered after TenantSharePause, and holds no slot
// while it waits: with a cap of two, tenant A holding its one and a
// refused call of A waiting its 2 s, tenant B's call is answered at once.
// Before the pause a tenant's 64 callers retrying every 10 ms made 4,900
// refusals a second, and B's p99 went to 3x (make fairload).
func TestARefusalForTheShareWaitsWithoutASlot(t *testing.T) {
	_, ts := servedPack(t, conformanceIndex, host.SandboxConfig{}, service.Config{MaxConcurrency: 2, TenantSharePause: 2 * time.Second}, Config{})
	post := func(tenant, tool, input string) (int, time.Duration) {
		status, _, took := invokeAs(t, ts, tenant, tool, input)
		return status, took
	}
	if status, _ := post("B", "conformance.echo", `{"message":"b"}`); status != 200 {
		t.Fatalf("B alone: %d", status)
	}
	held := make(chan int, 1)
	go func() {
		status, _ := post("A", "conformance.hold", `{"release":"r","ms":3000}`)
		held <- status
	}()
	time.Sleep(300 * time.Millisecond) // A holds its share of one
	refused := make(chan time.Duration, 1)
	go func() {
		status, took := post("A", "conformance.echo", `{"message":"a"}`)
		if status != 503 {
			t.Errorf("A past its share: %d", status)
		}
		refused <- took
	}()
	time.Sleep(300 * time.Millisecond) // A's refusal is waiting
	if status, took := post("B", "conformance.echo", `{"message":"b"}`); status != 200 || took > time.Second {
		t.Errorf("B beside A's waiting refusal: %d after %v", status, took)
	}
	if took := <-refused; took < 2*time.Second {
		t.Errorf("A's refusal was answered after %v, before its pause of 2 s", took)
	}
	if status := <-held; status != 200 {
		t.Errorf("A's held call: %d", status)
	}
}

var conformanceIndex = filepath.Join("..", "..", "wasm-examples", "conformance", "index.json")

// servedPack serves the pack of index, loaded with sb (its cache in a
// temporary directory unless sb names one), under cfg with the token "tok",
// until the test ends.
func servedPack(t *testing.T, index string, sb host.SandboxConfig, sc service.Config, hc Config) (*Server, *httptest.Server) {
	t.Helper()
	if sb.CacheDir == "" { // shared: a Go pack compiles once for all these tests (12 s each under -race)
		sb.CacheDir = filepath.Join(os.TempDir(), "packd-test-wazero-cache")
	}
	p, err := host.Load(context.Background(), host.Config{IndexPath: index, Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	sc.Pack = p
	s := newFace(t, sc, hc)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

var shareClient = &http.Client{Timeout: 30 * time.Second}

// invokeAs invokes tool with input for tenant, and returns the answer's
// status and body, and how long it took to come.
func invokeAs(t *testing.T, ts *httptest.Server, tenant, tool, input string) (int, string, time.Duration) {
	body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":%q},"input":%s,"ctx":{"tenantId":%q,"runId":"r"}}`, tool, input, tenant)
	req, _ := http.NewRequest("POST", ts.URL+"/v1/invoke", strings.NewReader(body))
	req.Header.Set("Kindgi-Pack-Token", "tok")
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := shareClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, "", 0
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), time.Since(start)
}
