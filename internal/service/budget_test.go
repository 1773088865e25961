package service

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/host"
)

// clockedBudgets is budgets under p on a clock the test moves.
func clockedBudgets(p *host.Policy) (*budgets, *time.Time) {
	now := time.Unix(1_000_000, 0)
	b := newBudgets(p)
	b.now = func() time.Time { return now }
	return b, &now
}

func toolCall(tenant string) host.Call {
	return host.Call{Target: host.TargetTool, ID: "t.x", Correlation: host.Correlation{TenantID: tenant}}
}

// refusedFor is the wait of a budget's refusal (0 and false when it admitted).
func refusedFor(t *testing.T, b *budgets, tenant string) (host.Grant, time.Duration, bool) {
	t.Helper()
	g, err := b.admit(toolCall(tenant))
	if err == nil {
		return g, 0, false
	}
	var d *host.Deny
	if !errors.As(err, &d) || d.Code != host.RefusalTenantBudget || d.RetryAfter <= 0 {
		t.Fatalf("refusal %v, want %s with a wait", err, host.RefusalTenantBudget)
	}
	return g, d.RetryAfter, true
}

// TestBudgetFuel: a tenant's fuel, spent as its calls run (their meters),
// empties its bucket; a call is refused while the bucket is in debt, with
// the time the debt takes to be paid at the rate, and admitted once it
// is; another tenant is not touched.
func TestBudgetFuel(t *testing.T) {
	b, now := clockedBudgets(&host.Policy{DefaultBudget: &host.Budget{FuelPerSecond: 1000, FuelBurst: 2000}})
	g, _, refused := refusedFor(t, b, "a")
	if refused || g.Fuel == nil {
		t.Fatal("the first call is refused, or gets no fuel meter")
	}
	g.Fuel.Add(2500) // as its slices were taken and its unburnt rest given back
	g.Release()
	if _, wait, refused := refusedFor(t, b, "a"); !refused || wait != 500*time.Millisecond {
		t.Fatalf("after 2,500 of a 2,000 burst: refused %v, wait %v; want 0.5 s", refused, wait)
	}
	if _, _, refused := refusedFor(t, b, "b"); refused {
		t.Fatal("another tenant is refused")
	}
	*now = now.Add(499 * time.Millisecond)
	if _, _, refused := refusedFor(t, b, "a"); !refused {
		t.Fatal("admitted before its debt is paid")
	}
	*now = now.Add(2 * time.Millisecond)
	if _, _, refused := refusedFor(t, b, "a"); refused {
		t.Fatal("refused once its debt is paid")
	}
	// Spending while other calls run is seen at once: no wait for a call
	// to end.
	g1, _, _ := refusedFor(t, b, "c")
	g1.Fuel.Add(5000)
	if _, wait, refused := refusedFor(t, b, "c"); !refused || wait != 3*time.Second {
		t.Fatalf("while a call that spent 5,000 runs: refused %v, wait %v; want 3 s", refused, wait)
	}
}

// TestBudgetCalls: calls a second, with a second's burst (at least one
// call); a refusal says when the next call fits; a call refused by the
// tenant's share gives its call back.
func TestBudgetCalls(t *testing.T) {
	b, now := clockedBudgets(&host.Policy{Tenants: map[string]host.TenantPolicy{"a": {Budget: &host.Budget{CallsPerSecond: 4}}}})
	for i := range 4 {
		if _, _, refused := refusedFor(t, b, "a"); refused {
			t.Fatalf("call %d of a burst of 4 refused", i)
		}
	}
	if _, wait, refused := refusedFor(t, b, "a"); !refused || wait != 250*time.Millisecond {
		t.Fatalf("the fifth call: refused %v, wait %v; want 0.25 s", refused, wait)
	}
	*now = now.Add(250 * time.Millisecond)
	share := func(host.Call) (host.Grant, error) { return host.Grant{}, &host.Deny{Code: host.RefusalTenantShare} }
	if _, err := b.admitWith(share)(toolCall("a")); err == nil {
		t.Fatal("the share's refusal is lost")
	}
	if _, _, refused := refusedFor(t, b, "a"); refused {
		t.Fatal("a call the share refused kept its call of the budget")
	}
	// A tenant without a budget, and a check, are not bounded.
	for range 10 {
		if _, _, refused := refusedFor(t, b, "unbudgeted"); refused {
			t.Fatal("a tenant without a budget is refused")
		}
		if _, err := b.admit(host.Call{Target: host.TargetCheck, ID: "c"}); err != nil {
			t.Fatal("a check is refused")
		}
	}
}

// TestBudgetEgressAndCap: outbound requests and bytes are taken when a
// call ends; the per-call fuel cap goes with the grant.
func TestBudgetEgressAndCap(t *testing.T) {
	b, now := clockedBudgets(&host.Policy{DefaultBudget: &host.Budget{EgressRequestsPerMinute: 60, EgressBytesPerHour: 3600, MaxFuelPerCall: 12345}})
	g, _, _ := refusedFor(t, b, "a")
	if g.MaxFuel != 12345 || g.Fuel != nil {
		t.Fatalf("grant %+v: want MaxFuel 12345 and no fuel meter", g)
	}
	// The grant says what it holds the call to.
	want := []host.Obligation{{Kind: "rateLimit", Resource: "egressRequests", WindowSecs: 60, Max: 60},
		{Kind: "rateLimit", Resource: "egressBytes", WindowSecs: 3600, Max: 3600}, {Kind: "limit", Resource: "fuel", Max: 12345}}
	if fmt.Sprint(g.Obligations) != fmt.Sprint(want) {
		t.Fatalf("obligations %v, want %v", g.Obligations, want)
	}
	b.spend(toolCall("a"), host.Usage{Egress: host.EgressSummary{Requests: 61}})
	if _, wait, refused := refusedFor(t, b, "a"); !refused || wait != time.Second {
		t.Fatalf("after 61 requests of 60 a minute: refused %v, wait %v; want 1 s", refused, wait)
	}
	*now = now.Add(time.Second)
	b.spend(toolCall("a"), host.Usage{Egress: host.EgressSummary{BytesSent: 3000, BytesReceived: 1600}})
	// A rate so small its wait would overflow a duration still refuses,
	// for at most a year.
	tiny, _ := clockedBudgets(&host.Policy{DefaultBudget: &host.Budget{CallsPerSecond: 1e-300}})
	refusedFor(t, tiny, "a")
	if _, wait, refused := refusedFor(t, tiny, "a"); !refused || wait != maxWait {
		t.Fatalf("at 1e-300 calls a second: refused %v, wait %v; want a year", refused, wait)
	}
	// What a call sends after its tenant was forgotten (pruned while it
	// ran) is still taken.
	b.mu.Lock()
	delete(b.tenants, "gone")
	b.mu.Unlock()
	b.spend(toolCall("gone"), host.Usage{Egress: host.EgressSummary{Requests: 100}})
	if _, _, refused := refusedFor(t, b, "gone"); !refused {
		t.Fatal("a forgotten tenant's egress was not taken")
	}
	if _, wait, refused := refusedFor(t, b, "a"); !refused || wait != 1000*time.Second {
		t.Fatalf("after 4,600 bytes of 3,600 an hour: refused %v, wait %v; want 1,000 s", refused, wait)
	}
}

// TestBudgetPolicyChange: a new policy applies from the next call and
// keeps each tenant's buckets (a debt stays a debt); a tenant whose
// budget is gone is admitted.
func TestBudgetPolicyChange(t *testing.T) {
	b, _ := clockedBudgets(&host.Policy{DefaultBudget: &host.Budget{FuelPerSecond: 100}})
	g, _, _ := refusedFor(t, b, "a")
	g.Fuel.Add(1100) // 10 s of debt at 100 a second
	b.setPolicy(&host.Policy{DefaultBudget: &host.Budget{FuelPerSecond: 100, FuelBurst: 1e6}})
	if _, wait, refused := refusedFor(t, b, "a"); !refused || wait != 10*time.Second {
		t.Fatalf("after a reload with a larger burst: refused %v, wait %v; want the same debt, 10 s", refused, wait)
	}
	b.setPolicy(&host.Policy{DefaultBudget: &host.Budget{FuelPerSecond: 1000}})
	if _, wait, _ := refusedFor(t, b, "a"); wait != time.Second {
		t.Fatalf("at 10× the rate the debt takes %v, want 1 s", wait)
	}
	b.setPolicy(&host.Policy{Tenants: map[string]host.TenantPolicy{"a": {Budget: &host.Budget{}}}, DefaultBudget: &host.Budget{FuelPerSecond: 1}})
	if _, _, refused := refusedFor(t, b, "a"); refused {
		t.Fatal("a tenant whose own budget is empty is refused")
	}
}

// TestBudgetsForgetIdleTenants: calls under a default budget from many
// tenant ids leave no state once their buckets have filled again, but a
// tenant in debt, or with a call in flight, is kept.
func TestBudgetsForgetIdleTenants(t *testing.T) {
	b, now := clockedBudgets(&host.Policy{DefaultBudget: &host.Budget{FuelPerSecond: 1000, CallsPerSecond: 10}})
	for i := range 10_000 {
		g, _, _ := refusedFor(t, b, fmt.Sprint("tenant-", i))
		g.Fuel.Add(500)
		g.Release()
	}
	debtor, _, _ := refusedFor(t, b, "debtor")
	debtor.Fuel.Add(1e6) // 1,000 s of debt
	debtor.Release()
	running, _, _ := refusedFor(t, b, "running")
	*now = now.Add(2 * time.Second)
	refusedFor(t, b, "newcomer") // prunes
	b.mu.Lock()
	_, kept := b.tenants["debtor"]
	n := len(b.tenants)
	b.mu.Unlock()
	if !kept || n != 3 {
		t.Fatalf("%d tenants kept (debtor kept: %v), want the debtor, the one running and the newcomer", n, kept)
	}
	running.Release()
}
