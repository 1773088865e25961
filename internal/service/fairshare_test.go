package service

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/host"
)

// TestFairShareIsWorkConservingAndKeepsARoom: with a cap of 16 (a
// reserve of 2), a tenant alone holds up to 14 calls; beside ten tenants
// calling now and then (11 active, a share of one call each) it still
// holds 14 while they hold nothing, where before it was refused past
// ceil(16/11) = 2 with 14 slots idle; a newcomer's first call is admitted
// beside it at once, up to its share; a slot freed goes to whoever asks,
// the reserve staying free; a tenant idle for the window no longer
// counts.
func TestFairShareIsWorkConservingAndKeepsARoom(t *testing.T) {
	now := time.Unix(1000, 0)
	f := newFairShare(16, 0, 2*time.Second)
	f.now = func() time.Time { return now }
	call := func(tenant string) (func(), error) {
		g, err := f.admit(host.Call{Correlation: host.Correlation{TenantID: tenant}})
		return g.Release, err
	}
	refused := func(err error) bool {
		var d *host.Deny
		return errors.As(err, &d) && d.Code == host.RefusalTenantShare
	}
	hold := func(tenant string, n int) []func() {
		t.Helper()
		var rs []func()
		for i := 0; i < n; i++ {
			r, err := call(tenant)
			if err != nil {
				t.Fatalf("%s, call %d: %v", tenant, i, err)
			}
			rs = append(rs, r)
		}
		return rs
	}
	a := hold("A", 14)
	if _, err := call("A"); !refused(err) {
		t.Fatalf("A alone past cap - reserve: %v", err)
	}
	for i := range 10 { // ten tenants, each calling once, done
		for _, r := range hold(fmt.Sprint("t", i), 1) {
			r()
		}
	}
	for _, r := range a {
		r()
	}
	a = hold("A", 14) // beside ten idle tenants: the whole cap less the reserve
	if _, err := call("A"); !refused(err) {
		t.Fatalf("A past cap - reserve beside idle tenants: %v", err)
	}
	b := hold("B", 1)                       // a newcomer, at once: the reserve
	if _, err := call("B"); !refused(err) { // its share is 1 of 12 tenants', the reserve taken
		t.Fatalf("B past its share, the cap full: %v", err)
	}
	b[0]()
	a[0]()
	a = append(a[1:], hold("A", 1)...) // a slot idle: A takes it back
	b = hold("B", 1)                   // and B still finds the reserve
	for _, r := range append(a, b...) {
		r()
	}
	now = now.Add(3 * time.Second) // every tenant idle for the window
	r := hold("A", 14)
	for _, r := range r {
		r()
	}
	if len(f.tenants) > 2 || f.inFlight != 0 {
		t.Fatalf("%d tenants kept, %d calls in flight", len(f.tenants), f.inFlight)
	}
}
