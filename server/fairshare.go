package server

import (
	"sync"
	"time"

	"github.com/kindgi/packd/host"
)

// DefaultTenantShareWindow is how long a tenant counts as calling after its
// last call began or ended (Config.TenantShareWindow).
const DefaultTenantShareWindow = 2 * time.Second

// fairShare keeps one tenant from holding the whole concurrency cap while
// other tenants call: with n tenants active (a call in flight, or one
// begun or ended within the window), a tenant may hold at most
// ceil(cap / n) calls; a tenant alone may hold them all. A call over its
// tenant's share is refused (host.RefusalTenantShare) before any pack code
// runs. Check-invokes, which carry no tenant, share one account ("").
type fairShare struct {
	capacity int
	window   time.Duration
	now      func() time.Time

	mu      sync.Mutex
	tenants map[string]*tenantUse
	pruned  time.Time
}

type tenantUse struct {
	inFlight int
	seen     time.Time
}

func newFairShare(capacity int, window time.Duration) *fairShare {
	return &fairShare{capacity: capacity, window: window, now: time.Now, tenants: map[string]*tenantUse{}}
}

// admit is the host.Admission of a service.
func (f *fairShare) admit(call host.Call) (func(), error) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prune(now)
	u := f.tenants[call.TenantID]
	if u == nil {
		u = &tenantUse{}
		f.tenants[call.TenantID] = u
	}
	u.seen = now
	if share := (f.capacity + len(f.tenants) - 1) / len(f.tenants); u.inFlight >= share {
		return nil, &host.Deny{Code: host.RefusalTenantShare, Reason: "overloaded"}
	}
	u.inFlight++
	return func() {
		f.mu.Lock()
		u.inFlight--
		u.seen = f.now()
		f.mu.Unlock()
	}, nil
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
