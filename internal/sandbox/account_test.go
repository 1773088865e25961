package sandbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kindgi/packd/internal/sandbox"
)

// TestAMemoryAccountBoundsItsCalls: a call's memory.grow past its
// account's share returns -1 (grow grows until refused, then traps writing
// past its end), in fresh and pooled instances; a call whose instance's
// memory alone is over the share does not start (ErrMemoryShare, an
// ErrMemoryBudget); a share of 0 bounds nothing; and every call gives back
// what it was charged.
func TestAMemoryAccountBoundsItsCalls(t *testing.T) {
	for _, pool := range []int{0, 1} {
		sb := newSandbox(t, sandbox.Config{PoolSize: pool, MemoryLimitPages: 64})
		m := compile(t, sb, hostile("grow"))
		share := int64(1 << 20)
		acct := &sandbox.MemoryAccount{Share: func() int64 { return share }}
		call := func() (sandbox.Reply, error) {
			return m.Call(context.Background(), sandbox.Request{Body: []byte(`{}`), Account: acct})
		}
		rep, err := call()
		if err == nil || rep.MemoryBytes != 1<<20 {
			t.Errorf("pool %d: grew to %d bytes under a share of 1 MiB (%v)", pool, rep.MemoryBytes, err)
		}
		if acct.Used() != 0 {
			t.Errorf("pool %d: the account holds %d bytes after the call", pool, acct.Used())
		}
		share = 0
		if rep, _ := call(); rep.MemoryBytes < 2<<20 {
			t.Errorf("pool %d: grew to %d bytes with no share", pool, rep.MemoryBytes)
		}
		share = 1000 // under the one page the module starts with
		if _, err := call(); !errors.Is(err, sandbox.ErrMemoryShare) || !errors.Is(err, sandbox.ErrMemoryBudget) {
			t.Errorf("pool %d: a call whose memory is over its share: %v", pool, err)
		}
		if acct.Used() != 0 {
			t.Errorf("pool %d: the account holds %d bytes after the refusal", pool, acct.Used())
		}
	}
}
