package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox"
)

// syncBuffer collects forwarded guest lines from concurrent calls.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cacheDir is a compilation cache shared by the tests of this package (and
// kept between runs), so a Go guest is compiled once, not once per test.
var cacheDir = filepath.Join(os.TempDir(), "packd-test-wazero-cache")

// resetPages is a Config.PoolEvents that notes how many pages each reset
// copied back, and pages what it noted so far, in order.
func resetPages() (events func(sandbox.PoolEvent), pages func() []int) {
	var mu sync.Mutex
	var noted []int
	return func(ev sandbox.PoolEvent) {
			if ev.Kind == sandbox.PoolReset {
				mu.Lock()
				noted = append(noted, ev.Pages)
				mu.Unlock()
			}
		}, func() []int {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(noted)
		}
}

func newSandbox(t testing.TB, cfg sandbox.Config) *sandbox.Sandbox {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = cacheDir
	}
	sb, err := sandbox.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close(context.Background()) })
	return sb
}

func compile(t testing.TB, sb *sandbox.Sandbox, path string) *sandbox.Module {
	t.Helper()
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `make wasm fixtures` first)", err)
	}
	m, err := sb.Compile(context.Background(), wasm)
	if err != nil {
		t.Fatalf("compiling %s: %v", path, err)
	}
	return m
}

func hostile(name string) string {
	return filepath.Join("..", "..", "testdata", "hostile", name+".wasm")
}

func call(t *testing.T, m *sandbox.Module, timeout time.Duration) (sandbox.Reply, error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	rep, err := m.Call(ctx, sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{}}`)})
	return rep, err, time.Since(start)
}

func TestEveryCallSeesAFreshInstance(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	m := compile(t, sb, hostile("counter"))
	for i := 0; i < 5; i++ {
		rep, err, _ := call(t, m, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(rep.Body); got != `{"global":1,"memory":1}` {
			t.Fatalf("call %d saw %s: state leaked from an earlier call", i+1, got)
		}
	}
}

func TestHostileGuestsStopWithTypedErrors(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{MemoryLimitPages: 256})
	// Guests that should stop by themselves get a deadline they never reach,
	// even under the race detector; the two that wait get a short one.
	const short, long = 300 * time.Millisecond, 30 * time.Second
	cases := []struct {
		name     string
		deadline time.Duration
		check    func(error) bool
	}{
		{"loop", short, func(err error) bool { return errors.Is(err, sandbox.ErrDeadline) }},
		{"sleep", short, func(err error) bool { return errors.Is(err, sandbox.ErrDeadline) }},
		{"trap", long, func(err error) bool {
			var te *sandbox.TrapError
			return errors.As(err, &te) && te.Message == "unreachable"
		}},
		{"recurse", long, func(err error) bool {
			var te *sandbox.TrapError
			return errors.As(err, &te) && strings.Contains(te.Message, "stack")
		}},
		{"grow", long, func(err error) bool {
			var te *sandbox.TrapError
			return errors.As(err, &te) && strings.Contains(te.Message, "out of bounds")
		}},
		{"oob", long, abiError(abi.ImportResponseWrite, "")},
		{"jsonscanoob", long, abiError(abi.ImportJSONScan, "outside guest memory")},
		{"jsonmembersoob", long, abiError(abi.ImportJSONMembers, "outside guest memory")},
		{"jsonmemberswrap", long, abiError(abi.ImportJSONMembers, "outside guest memory")},
		{"jsonmembersoverlap", long, abiError(abi.ImportJSONMembers, "overlaps")},
		{"requestfieldsoob", long, abiError(abi.ImportRequestFields, "outside guest memory")},
		{"huge", long, func(err error) bool { return errors.Is(err, sandbox.ErrOutputTooLarge) }},
		{"exit", long, func(err error) bool {
			var ee *sandbox.ExitError
			return errors.As(err, &ee) && ee.Code == 3
		}},
		{"noexport", long, func(err error) bool { return errors.Is(err, sandbox.ErrMissingExport) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := compile(t, sb, hostile(c.name))
			_, err, took := call(t, m, c.deadline)
			if !c.check(err) {
				t.Fatalf("got error %v (%T)", err, err)
			}
			if c.deadline == short && took > short+2*time.Second {
				t.Fatalf("took %v, far past the %v deadline", took, short)
			}
		})
	}
	// The sandbox still serves calls after all of that.
	rep, err, _ := call(t, compile(t, sb, hostile("counter")), 5*time.Second)
	if err != nil || rep.Status != abi.StatusOK {
		t.Fatalf("after hostile guests: %v %v", rep, err)
	}
}

// abiError checks for an ABIError of the host function fn whose reason
// says reason.
func abiError(fn, reason string) func(error) bool {
	return func(err error) bool {
		var ae *sandbox.ABIError
		return errors.As(err, &ae) && ae.Func == fn && strings.Contains(ae.Reason, reason)
	}
}

func TestCancellationStopsABlockedGuest(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	m := compile(t, sb, hostile("sleep"))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := m.Call(ctx, sandbox.Request{})
	if !errors.Is(err, sandbox.ErrCancelled) {
		t.Fatalf("got %v, want ErrCancelled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cancel took %v", took)
	}
}

func TestMissingExportIsReportedAtCompile(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	m := compile(t, sb, hostile("noexport"))
	if !errors.Is(m.Shape(), sandbox.ErrMissingExport) {
		t.Fatalf("Shape() = %v", m.Shape())
	}
	if _, err := m.Describe(context.Background()); !errors.Is(err, sandbox.ErrMissingExport) {
		t.Fatalf("Describe: %v", err)
	}
}

func TestCompileRejectsForeignImportsAndGarbage(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	// (module (import "env" "f" (func)))
	foreign := []byte{0, 'a', 's', 'm', 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 2, 9, 1, 3, 'e', 'n', 'v', 1, 'f', 0, 0}
	if _, err := sb.Compile(context.Background(), foreign); err == nil || !strings.Contains(err.Error(), "env.f") {
		t.Fatalf("foreign import: %v", err)
	}
	if _, err := sb.Compile(context.Background(), []byte("not wasm")); err == nil {
		t.Fatal("garbage compiled")
	}
}

func TestGoGuestEnvOutputAndConcurrency(t *testing.T) {
	var stdout, stderr syncBuffer
	sb := newSandbox(t, sandbox.Config{Stdout: &stdout, Stderr: &stderr})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm"))
	ctx := context.Background()

	rep, err := m.Call(ctx, sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"conformance.process-env"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`), Env: []string{"ONLY_THIS=1"}})
	if err != nil || string(rep.Body) != `{"names":["ONLY_THIS"]}` {
		t.Fatalf("env: %s %v", rep.Body, err)
	}

	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := m.Call(ctx, sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"conformance.noisy"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)})
			if err != nil || string(rep.Body) != `{"ok":true}` {
				t.Errorf("noisy: %s %v", rep.Body, err)
			}
		}()
	}
	wg.Wait()
	_ = sb.Close(ctx) // the lines are written from a queue: Close waits for them
	// Each call's lines arrive whole; the calls ran at once, so their lines
	// may come in any order between them.
	lines := map[string]int{}
	for _, l := range strings.SplitAfter(stdout.String(), "\n") {
		lines[l]++
	}
	if want := map[string]int{"noisy: a line on stdout\n": 4, `{"v":2,"kind":"result","output":{"ok":false}}` + "\n": 4, "": 1}; !maps.Equal(lines, want) {
		t.Errorf("stdout lines = %q", stdout.String())
	}
	if got := stderr.String(); strings.Count(got, "noisy: a line on stderr\n") != 4 {
		t.Errorf("stderr lines = %q", got)
	}
}

func TestGoGuestSleepWakesOnDeadline(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm"))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Call(ctx, sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"conformance.sleep"},"input":{"ms":60000},"ctx":{"tenantId":"t","runId":"r"}}`)})
	if !errors.Is(err, sandbox.ErrDeadline) {
		t.Fatalf("got %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("took %v", took)
	}
}

func TestCloseIsSafeTwice(t *testing.T) {
	sb, err := sandbox.New(context.Background(), sandbox.Config{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestModuleABIVersion: a module's guest ABI version is read when it is
// described and kept; a version packd does not serve fails the describe.
func TestModuleABIVersion(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	m := compile(t, sb, hostile("counter"))
	if v := m.ABIVersion(); v != 0 {
		t.Fatalf("ABIVersion before Describe = %d", v)
	}
	if _, err := m.Describe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := m.ABIVersion(); v != abi.GuestABIVersion {
		t.Fatalf("ABIVersion = %d, want %d", v, abi.GuestABIVersion)
	}
	m2 := compile(t, sb, hostile("abiv2"))
	var abiErr *sandbox.ABIError
	if _, err := m2.Describe(context.Background()); !errors.As(err, &abiErr) || !strings.Contains(err.Error(), "guest ABI version 2, packd speaks 1") {
		t.Fatalf("Describe of a version 2 module: %v", err)
	}
	if v := m2.ABIVersion(); v != 0 {
		t.Fatalf("ABIVersion of a refused module = %d", v)
	}
}

// TestImportProblemsSayWhatPackdProvides: a module importing a kindgi
// function packd does not have, or one of its functions with another type,
// is refused at compile with the names and types packd provides (it was
// refused at instantiation, in wazero's words: `"http_get" is not exported
// in module "kindgi"`, `v_i64 != v_i32`).
func TestImportProblemsSayWhatPackdProvides(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	for name, want := range map[string]string{
		"missingimport": "the module imports kindgi.http_get, which packd does not provide; kindgi has http_request, http_response_read, json_members, json_scan, log, request_fields, request_len, request_read, response_write",
		"wrongimport":   "the module imports kindgi.request_len with type (result i64), but packd's has type (result i32)",
	} {
		wasm, err := os.ReadFile(hostile(name))
		if err != nil {
			t.Fatal(err)
		}
		_, err = sb.Compile(context.Background(), wasm)
		if !errors.Is(err, sandbox.ErrInvalidModule) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}
