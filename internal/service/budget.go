package service

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kindgi/packd/internal/host"
)

// budgets keeps what each tenant's tool calls may spend over time (the
// policy file's budgets, host.Budget): a token bucket for each bounded
// dimension, filled at its rate up to its burst. A call is admitted only
// while its tenant's buckets hold something (calls: a whole call; fuel
// and egress: anything, as what a call spends is not known before it
// runs), before any pack code runs; else it is refused with
// host.RefusalTenantBudget and the time the emptiest bucket takes to
// allow it again. What a call spends is taken as it is spent: its fuel
// slice by slice while it runs (sandbox.Request.FuelMeter), so that a
// tenant's other calls see it at once; its outbound requests and bytes
// when it ends. A call that outruns its tenant's bucket finishes within
// its own limits, and the debt delays the tenant's next calls: over time
// a tenant spends its rate, whatever the pattern of its calls.
//
// A reload reads the budgets anew (setPolicy) and keeps every tenant's
// buckets: a new rate applies from the next call, a smaller burst cuts
// what a bucket holds.
type budgets struct {
	policy atomic.Pointer[host.Policy]
	now    func() time.Time

	mu      sync.Mutex
	tenants map[string]*tenantBudget
	pruned  time.Time
}

// tenantBudget is one tenant's buckets. spent is the fuel its calls took
// since the fuel bucket last looked (their meters add to it as they run).
type tenantBudget struct {
	fuel, calls, egressRequests, egressBytes bucket
	spent                                    atomic.Int64
	inFlight                                 int
}

// bucket is a token bucket that can fall below zero (a debt): level as
// of at.
type bucket struct {
	level float64
	at    time.Time
	begun bool // filled once (a bucket starts full)
}

// fill brings b to now at rate a second, holding at most burst.
func (b *bucket) fill(now time.Time, rate, burst float64) {
	if !b.begun {
		b.level, b.at, b.begun = burst, now, true
		return
	}
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.level += dt * rate
		b.at = now
	}
	b.level = min(b.level, burst)
}

// wait is how long b takes at rate to hold need, at most maxWait (a rate
// of 1e-300 a second must not make a wait that overflows, and so admits).
func (b *bucket) wait(rate, need float64) time.Duration {
	if b.level >= need || rate <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(min((need-b.level)/rate, maxWait.Seconds()) * float64(time.Second)))
}

// maxWait is the longest wait a refusal names.
const maxWait = 365 * 24 * time.Hour

// rates is a budget's dimensions as buckets: rate a second and burst.
type rates struct{ rate, burst float64 }

func budgetRates(b *host.Budget) (fuel, calls, requests, bytes rates) {
	fuel = rates{b.FuelPerSecond, b.FuelBurst}
	if fuel.burst == 0 {
		fuel.burst = b.FuelPerSecond
	}
	calls = rates{b.CallsPerSecond, max(1, b.CallsPerSecond)}
	requests = rates{b.EgressRequestsPerMinute / 60, b.EgressRequestsPerMinute}
	bytes = rates{b.EgressBytesPerHour / 3600, b.EgressBytesPerHour}
	return
}

func newBudgets(p *host.Policy) *budgets {
	b := &budgets{now: time.Now, tenants: map[string]*tenantBudget{}}
	b.policy.Store(p)
	return b
}

// setPolicy makes p's budgets the ones kept from the next call on.
func (b *budgets) setPolicy(p *host.Policy) { b.policy.Store(p) }

// admit admits a tool call within its tenant's budget, or refuses it
// with the time its tenant should wait. A call of a tenant without a
// budget (and a check, which carries no tenant) is admitted as it is.
func (b *budgets) admit(call host.Call) (host.Grant, error) {
	if call.Target != host.TargetTool {
		return host.Grant{}, nil
	}
	bud := b.policy.Load().BudgetFor(call.TenantID)
	if bud == nil || *bud == (host.Budget{}) {
		return host.Grant{}, nil
	}
	fuel, calls, requests, bytes := budgetRates(bud)
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prune(now)
	t := b.tenants[call.TenantID]
	if t == nil {
		t = &tenantBudget{}
		b.tenants[call.TenantID] = t
	}
	t.look(now, bud)
	var wait time.Duration
	if fuel.rate > 0 && t.fuel.level <= 0 {
		wait = max(wait, t.fuel.wait(fuel.rate, math.SmallestNonzeroFloat64))
	}
	if calls.rate > 0 && t.calls.level < 1 {
		wait = max(wait, t.calls.wait(calls.rate, 1))
	}
	if requests.rate > 0 && t.egressRequests.level <= 0 {
		wait = max(wait, t.egressRequests.wait(requests.rate, math.SmallestNonzeroFloat64))
	}
	if bytes.rate > 0 && t.egressBytes.level <= 0 {
		wait = max(wait, t.egressBytes.wait(bytes.rate, math.SmallestNonzeroFloat64))
	}
	if wait > 0 {
		return host.Grant{}, &host.Deny{Code: host.RefusalTenantBudget, Reason: "overloaded", RetryAfter: wait}
	}
	if calls.rate > 0 {
		t.calls.level--
	}
	t.inFlight++
	g := host.Grant{MaxFuel: bud.MaxFuelPerCall, Obligations: obligations(bud), Release: func() {
		b.mu.Lock()
		t.inFlight--
		b.mu.Unlock()
	}}
	if fuel.rate > 0 {
		g.Fuel = &t.spent
	}
	return g, nil
}

// obligations are what a call admitted under bud is held to: its rate
// limits (a bucket's rate over the window it holds) and its cap.
func obligations(bud *host.Budget) []host.Obligation {
	var out []host.Obligation
	for _, r := range [...]struct {
		resource    string
		max, window float64
	}{{"calls", bud.CallsPerSecond, 1}, {"fuel", bud.FuelPerSecond, 1},
		{"egressRequests", bud.EgressRequestsPerMinute, 60}, {"egressBytes", bud.EgressBytesPerHour, 3600}} {
		if r.max > 0 {
			out = append(out, host.Obligation{Kind: "rateLimit", Resource: r.resource, WindowSecs: r.window, Max: r.max})
		}
	}
	if bud.MaxFuelPerCall > 0 {
		out = append(out, host.Obligation{Kind: "limit", Resource: "fuel", Max: float64(bud.MaxFuelPerCall)})
	}
	return out
}

// look takes from t's fuel bucket what its calls spent since the last
// look (spent over that time, as they ran: the bucket refilled meanwhile)
// and fills its buckets to now under bud.
func (t *tenantBudget) look(now time.Time, bud *host.Budget) {
	fuel, calls, requests, bytes := budgetRates(bud)
	t.fuel.level -= float64(t.spent.Swap(0))
	t.fuel.fill(now, fuel.rate, fuel.burst)
	t.calls.fill(now, calls.rate, calls.burst)
	t.egressRequests.fill(now, requests.rate, requests.burst)
	t.egressBytes.fill(now, bytes.rate, bytes.burst)
}

// giveBack undoes the admission of a call that did not run.
func (b *budgets) giveBack(call host.Call) {
	bud := b.policy.Load().BudgetFor(call.TenantID)
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.tenants[call.TenantID]; t != nil {
		t.inFlight--
		if bud != nil && bud.CallsPerSecond > 0 {
			t.calls.level++
		}
	}
}

// spend takes what a tool call sent out from its tenant's buckets, once
// it has ended (its fuel was taken as it ran).
func (b *budgets) spend(call host.Call, use host.Usage) {
	if call.Target != host.TargetTool || use.Egress.Requests == 0 && use.Egress.BytesSent+use.Egress.BytesReceived == 0 {
		return
	}
	bud := b.policy.Load().BudgetFor(call.TenantID)
	if bud == nil {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tenants[call.TenantID]
	if t == nil { // pruned since its admission (its buckets were full)
		t = &tenantBudget{}
		b.tenants[call.TenantID] = t
	}
	t.look(now, bud) // the buckets as of now, when it was sent
	t.egressRequests.level -= float64(use.Egress.Requests)
	t.egressBytes.level -= float64(use.Egress.BytesSent + use.Egress.BytesReceived)
}

// prune forgets, at most once a second, the tenants whose buckets have
// filled up again with no call in flight: they hold what a tenant never
// seen holds, so the map keeps only the tenants that spent within about
// a burst's time, whatever tenant ids callers send.
func (b *budgets) prune(now time.Time) {
	if now.Sub(b.pruned) < time.Second {
		return
	}
	b.pruned = now
	p := b.policy.Load()
	for name, t := range b.tenants {
		bud := p.BudgetFor(name)
		if bud == nil {
			delete(b.tenants, name) // the policy has no budget for it now
			continue
		}
		if t.inFlight > 0 {
			continue
		}
		t.look(now, bud)
		fuel, calls, requests, bytes := budgetRates(bud)
		if t.fuel.level >= fuel.burst && t.calls.level >= calls.burst &&
			t.egressRequests.level >= requests.burst && t.egressBytes.level >= bytes.burst {
			delete(b.tenants, name)
		}
	}
}

// admitWith admits a call by its tenant's budget, then by its share of
// the service (nil: none); a call the share refuses gives back the call
// its budget took.
func (b *budgets) admitWith(share host.Admission) host.Admission {
	return func(call host.Call) (host.Grant, error) {
		g, err := b.admit(call)
		if err != nil || share == nil {
			return g, err
		}
		sg, err := share(call)
		if err != nil {
			if g.Release != nil {
				b.giveBack(call)
			}
			return sg, err
		}
		if g.Release == nil {
			g.Release, g.Memory = sg.Release, sg.Memory
			return g, nil
		}
		release := g.Release
		g.Release, g.Memory = func() { sg.Release(); release() }, sg.Memory
		return g, nil
	}
}
