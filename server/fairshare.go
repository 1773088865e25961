package server

import (
	"sync"
	"time"

	"github.com/kindgi/packd/host"
)

// DefaultTenantShareWindow is how long a tenant counts as calling after its
// last call began or ended (Config.TenantShareWindow).
const DefaultTenantShareWindow = 2 * time.Second

// DefaultTenantSharePause is how long a call refused for its tenant's
// share waits before its answer (Config.TenantSharePause).
const DefaultTenantSharePause = 250 * time.Millisecond

// fairShare keeps one tenant from holding the whole concurrency cap, or
// the whole memory budget, while other tenants call: with n tenants active
// (a call in flight, or one begun or ended within the window), a tenant
// may hold at most ceil(cap / n) calls, and its running calls at most
// ceil(memory / n) bytes of linear memory; a tenant alone may hold it all.
// A call over its tenant's share of the cap is refused
// (host.RefusalTenantShare) before any pack code runs; one whose
// instance's memory does not fit in its tenant's share is refused with the
// same code by the host, and a memory.grow past the share returns -1.
// Check-invokes, which carry no tenant, share one account ("").
type fairShare struct {
	capacity int
	memory   int64 // the memory budget (0: no bound, so no shares of it)
	window   time.Duration
	now      func() time.Time

	mu      sync.Mutex
	tenants map[string]*tenantUse
	pruned  time.Time
}

type tenantUse struct {
	inFlight int
	seen     time.Time
	memory   *host.MemoryAccount
}

func newFairShare(capacity int, memory int64, window time.Duration) *fairShare {
	return &fairShare{capacity: capacity, memory: memory, window: window, now: time.Now, tenants: map[string]*tenantUse{}}
}

// admit is the host.Admission of a service.
func (f *fairShare) admit(call host.Call) (host.Grant, error) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prune(now)
	u := f.tenants[call.TenantID]
	if u == nil {
		u = &tenantUse{memory: &host.MemoryAccount{Share: f.memoryShare}}
		f.tenants[call.TenantID] = u
	}
	u.seen = now
	if share := (f.capacity + len(f.tenants) - 1) / len(f.tenants); u.inFlight >= share {
		return host.Grant{}, &host.Deny{Code: host.RefusalTenantShare, Reason: "overloaded"}
	}
	u.inFlight++
	return host.Grant{Memory: u.memory, Release: func() {
		f.mu.Lock()
		u.inFlight--
		u.seen = f.now()
		f.mu.Unlock()
	}}, nil
}

// memoryShare is the bytes of the memory budget each active tenant may
// hold, 0 (no bound) while one tenant is active or the budget has none.
func (f *fairShare) memoryShare() int64 {
	f.mu.Lock()
	n := int64(len(f.tenants))
	f.mu.Unlock()
	if n <= 1 || f.memory <= 0 {
		return 0
	}
	return (f.memory + n - 1) / n
}

// prune forgets the tenants that have no call in flight and none within
// the window, at most every tenth of a window (the map holds only the
// tenants that called within about one window).
func (f *fairShare) prune(now time.Time) {
	if now.Sub(f.pruned) < f.window/10 {
		return
	}
	f.pruned = now
	for name, u := range f.tenants {
		if u.inFlight == 0 && now.Sub(u.seen) >= f.window {
			delete(f.tenants, name)
		}
	}
}
