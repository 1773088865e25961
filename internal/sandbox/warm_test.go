package sandbox_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// poolEvents counts a sandbox's pool events by kind/reason.
type poolEvents struct {
	mu   sync.Mutex
	seen map[string]int
}

func (e *poolEvents) add(ev sandbox.PoolEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[string]int{}
	}
	e.seen[string(ev.Kind)+"/"+string(ev.Reason)]++
}

func (e *poolEvents) take() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := e.seen
	e.seen = nil
	return seen
}

// echoConformance calls a conformance module's echo (Go's, C's: they answer
// alike).
func echoConformance(t *testing.T, m *sandbox.Module) {
	t.Helper()
	rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"m"},"ctx":{"tenantId":"t","runId":"r"}}`)})
	if err != nil || string(rep.Body) != `{"message":"m"}` {
		t.Fatalf("echo: %s %v", rep.Body, err)
	}
}

// warmedGoModule is the conformance Go module, pooled and warmed, and the
// events of its pool.
func warmedGoModule(t *testing.T) (*sandbox.Module, *poolEvents) {
	events := &poolEvents{}
	sb := newSandbox(t, sandbox.Config{PoolSize: 2, PoolEvents: events.add})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm"))
	if err := m.Warm(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return m, events
}

// Warm does a Go module's load-time work (_initialize, the snapshot) at
// load: the first call finds an instance waiting. Without it the first
// call to a Go module spent 12-25 ms taking the snapshot, past a 20 ms
// deadline.
func TestWarmTakesTheSnapshotBeforeTheFirstCall(t *testing.T) {
	m, events := warmedGoModule(t)
	if sandbox.SnapshotTaken(m).IsZero() || m.PoolInstances() != 1 {
		t.Fatalf("after Warm: snapshot taken %v, %d instances", sandbox.SnapshotTaken(m), m.PoolInstances())
	}
	taken := sandbox.SnapshotTaken(m)
	if err := m.Warm(context.Background(), nil); err != nil || sandbox.SnapshotTaken(m) != taken {
		t.Fatalf("a second Warm: %v, snapshot taken %v then %v", err, taken, sandbox.SnapshotTaken(m))
	}
	echoConformance(t, m)
	if got := events.take(); got["hit/"] != 1 || got["miss/"] != 0 {
		t.Fatalf("the first call after Warm: %v, want one hit and no miss", got)
	}
}

// The janitor takes a snapshot anew a minute before it would expire, in
// the background: no call waits for _initialize, and the instances of the
// old one go.
func TestTheSnapshotIsTakenAnewBeforeItExpires(t *testing.T) {
	m, events := warmedGoModule(t)
	echoConformance(t, m)
	taken := sandbox.SnapshotTaken(m)
	sandbox.RefreshSnapshot(m, taken.Add(sandbox.SnapshotMaxAge-2*time.Minute))
	if sandbox.SnapshotTaken(m) != taken {
		t.Fatal("a snapshot two minutes from expiry was taken anew")
	}
	events.take()
	sandbox.RefreshSnapshot(m, taken.Add(sandbox.SnapshotMaxAge-time.Minute))
	if !sandbox.SnapshotTaken(m).After(taken) {
		t.Fatal("a snapshot a minute from expiry was not taken anew")
	}
	if got := events.take(); got["discard/idle"] != 1 || m.PoolInstances() != 1 {
		t.Fatalf("refresh: %v and %d instances, want the old one's instance discarded and the new one kept", got, m.PoolInstances())
	}
	echoConformance(t, m)
	if got := events.take(); got["hit/"] != 1 || got["miss/"] != 0 {
		t.Fatalf("the call after a refresh: %v, want one hit and no miss", got)
	}
}
