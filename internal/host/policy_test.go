package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
