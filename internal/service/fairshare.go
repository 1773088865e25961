package service

import (
	"sync"
	"time"

	"github.com/kindgi/packd/internal/host"
)

// DefaultTenantShareWindow is how long a tenant counts as calling after its
// last call began or ended (Config.TenantShareWindow).
const DefaultTenantShareWindow = 2 * time.Second

// DefaultTenantSharePause is how long a call refused for its tenant's
// share waits before its answer (Config.TenantSharePause).
const DefaultTenantSharePause = 250 * time.Millisecond

// fairShare keeps one tenant from holding the whole concurrency cap, or
// the whole memory budget, while other tenants call, and binds only then:
// it is work-conserving, and keeps room for a newcomer.
//
//   - Slots. A reserve of k = max(1, cap/8) slots is kept for tenants not
//     holding more than their share. With n tenants active (a call in
//     flight, or one begun or ended within the window), a tenant's share
//     is max(1, (cap-k)/n) calls. A call within its tenant's share is
//     admitted whenever a slot is free; one past it only while the calls
//     in flight, it included, leave the reserve free. So a tenant alone
//     holds up to cap-k, one beside idle tenants takes what they leave,
//     and while at most cap-k tenants call, their calls together leave k
//     slots free: a newcomer's first call is admitted at once.
//   - Memory. A reserve of an eighth of the budget is kept the same way.
//     A tenant's running calls may hold the larger of its share,
//     (budget - reserve) / n, and what the others leave of the budget less
//     the reserve. A newcomer's call that needs at most the reserve finds
//     it at once.
//
// A call past its tenant's share of slots is refused
// (host.RefusalTenantShare) before any pack code runs; one whose
// instance's memory does not fit in its tenant's allowance is refused
// with the same code by the host, and a memory.grow past it returns -1.
// Check-invokes, which carry no tenant, share one account ("").
type fairShare struct {
	capacity int
	memory   int64 // the memory budget (0: no bound, so no shares of it)
	window   time.Duration
	now      func() time.Time

	mu       sync.Mutex
	tenants  map[string]*tenantUse
	inFlight int // every tenant's
	pruned   time.Time
}

type tenantUse struct {
	inFlight int
	seen     time.Time
	memory   *host.MemoryAccount
}

func newFairShare(capacity int, memory int64, window time.Duration) *fairShare {
	return &fairShare{capacity: capacity, memory: memory, window: window, now: time.Now, tenants: map[string]*tenantUse{}}
}

// reserve is the part of a total kept free for tenants within their
// share: an eighth, at least one.
func reserve[T int | int64](total T) T { return max(1, total/8) }

// admit is the host.Admission of a service.
func (f *fairShare) admit(call host.Call) (host.Grant, error) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prune(now)
	u := f.tenants[call.TenantID]
	if u == nil {
		u = &tenantUse{}
		u.memory = &host.MemoryAccount{Share: func() int64 { return f.memoryShare(u) }}
		f.tenants[call.TenantID] = u
	}
	u.seen = now
	free := f.capacity - reserve(f.capacity)
	if share := max(1, free/len(f.tenants)); u.inFlight >= share && f.inFlight+1 > free {
		return host.Grant{}, &host.Deny{Code: host.RefusalTenantShare, Reason: "overloaded"}
	}
	u.inFlight++
	f.inFlight++
	return host.Grant{Memory: u.memory, Release: func() {
		f.mu.Lock()
		u.inFlight--
		f.inFlight--
		u.seen = f.now()
		f.mu.Unlock()
	}}, nil
}

// memoryShare is the bytes of the memory budget u's running calls may
// hold: the larger of its share and what the other tenants leave of the
// budget less the reserve (0: the budget has no bound).
func (f *fairShare) memoryShare(u *tenantUse) int64 {
	if f.memory <= 0 {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	free := f.memory - reserve(f.memory)
	var others int64
	for _, o := range f.tenants {
		if o != u {
			others += o.memory.Used()
		}
	}
	return max(free/int64(max(1, len(f.tenants))), free-others)
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
