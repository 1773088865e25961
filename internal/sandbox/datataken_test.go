package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// Once a pooled module's snapshot maps an image, wazero no longer writes
// its data segments into the instances it makes (a pool miss spent 70%
// of its time writing 1.5 MiB of a Go module's data that the revert to
// the image threw away): packd writes them where an instance needs them.
// Every way of making an instance answers the data: the pooled one, a
// pool miss (from the snapshot), a fresh call, a snapshot taken anew. A
// module with a start function (it runs inside instantiation, after the
// data) keeps its data with wazero.
func TestDataIsWrittenWhereAnInstanceNeedsIt(t *testing.T) {
	for _, c := range []struct {
		name  string
		taken bool
	}{{"datacall", true}, {"startdata", false}} {
		t.Run(c.name, func(t *testing.T) {
			m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 2}), hostile(c.name))
			if err := m.Warm(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			if got := sandbox.DataTaken(m); got != c.taken {
				t.Fatalf("data taken from wazero: %v, want %v", got, c.taken)
			}
			answers := func(how string, req sandbox.Request) {
				t.Helper()
				rep, err := m.Call(context.Background(), req)
				if err != nil || string(rep.Body) != `"0123456789"` {
					t.Fatalf("%s: %q %v", how, rep.Body, err)
				}
			}
			answers("the warm instance", sandbox.Request{})
			if err := sandbox.MakePooled(m); err != nil {
				t.Fatal(err)
			}
			made := sandbox.InstancesMade(m)
			answers("a pool miss", sandbox.Request{})
			answers("a fresh call", sandbox.Request{Fresh: true})
			sandbox.RefreshSnapshot(m, time.Now().Add(sandbox.SnapshotMaxAge))
			if sandbox.InstancesMade(m) == made {
				t.Fatal("the snapshot was not taken anew")
			}
			answers("after the snapshot was taken anew", sandbox.Request{})
		})
	}
}
