package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kindgi/packd/internal/host"
)

func TestPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, body := range map[string]string{
		"bad json":      `{`,
		"unknown field": `{"defualt":"deny"}`,
		"bad default":   `{"default":"maybe"}`,
		"bad pattern":   `{"tenants":{"t":{"allow":["a*b"]}}}`,
		"empty pattern": `{"tenants":{"t":{"deny":[""]}}}`,
	} {
		if _, err := host.LoadPolicy(write(name, body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := host.LoadPolicy(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing policy file was accepted")
	}
	p, err := host.LoadPolicy(write("ok.json", `{"default":"deny","tenants":{
		"reader":{"allow":["pack.read-*"],"deny":["pack.read-secrets"]},
		"all":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tenant, id string
		allowed    bool
	}{
		{"reader", "pack.read-docs", true},
		{"reader", "pack.read-secrets", false},
		{"reader", "pack.write", false},
		{"all", "pack.write", true},
		{"stranger", "pack.read-docs", false},
	}
	for _, c := range cases {
		err := p.Check(context.Background(), host.Call{Target: host.TargetTool, ID: c.id, Correlation: host.Correlation{TenantID: c.tenant}})
		var d *host.Deny
		if (err == nil) != c.allowed || (err != nil && (!errors.As(err, &d) || d.Code != host.RefusalGateDenied)) {
			t.Errorf("%s calling %s: %v", c.tenant, c.id, err)
		}
	}
	if err := p.Check(context.Background(), host.Call{Target: host.TargetCheck, ID: "c"}); err != nil {
		t.Errorf("checks are not subject to the policy: %v", err)
	}
	if host.Gates(nil, nil) != nil {
		t.Error("no gates should be no gate")
	}
}

// TestPolicyBudgets: a budget that cannot be read is refused with its
// field named; a tenant's own budget replaces the default, and {} frees
// it of any.
func TestPolicyBudgets(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, want string }{
		{`{"defaultBudget":{"fuelPerSecond":"fast"}}`, "its defaultBudget.fuelPerSecond must be a number, not string"},
		{`{"tenants":{"t":{"budget":{"maxFuelPerCall":1.5}}}}`, "its tenants.budget.maxFuelPerCall must be a whole number, not number 1.5"},
		{`{"tenants":{"t":{"budget":{"callsPerSecond":-1}}}}`, `the policy's tenants["t"].budget.callsPerSecond must be a number from 0 to 1e+18, not -1`},
		{`{"defaultBudget":{"fuelBurst":100}}`, "the policy's defaultBudget.fuelBurst needs a fuelPerSecond"},
		{`{"defaultBudget":{"fuelPerSec":100}}`, `unknown field "fuelPerSec"`},
		{`{"defaultBudget":{"egressBytesPerHour":1e400}}`, "egressBytesPerHour"},
	} {
		p := filepath.Join(dir, "p.json")
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := host.LoadPolicy(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
	p := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(p, []byte(`{"defaultBudget":{"fuelPerSecond":1e9},"tenants":{
		"own":{"budget":{"callsPerSecond":5}},"free":{"budget":{}},"listed":{"allow":["x"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := host.LoadPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	for tenant, want := range map[string]host.Budget{"own": {CallsPerSecond: 5}, "free": {}, "listed": {FuelPerSecond: 1e9}, "stranger": {FuelPerSecond: 1e9}} {
		if got := pol.BudgetFor(tenant); got == nil || *got != want {
			t.Errorf("%s's budget: %+v, want %+v", tenant, got, want)
		}
	}
	if (*host.Policy)(nil).BudgetFor("t") != nil {
		t.Error("no policy has a budget")
	}
}
