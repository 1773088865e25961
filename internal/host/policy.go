package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Gates combines gates: each is consulted in order and the first refusal
// (or failure) wins.
func Gates(gates ...Gate) Gate {
	var list multiGate
	for _, g := range gates {
		if g != nil {
			list = append(list, g)
		}
	}
	if len(list) == 0 {
		return nil
	}
	return list
}

type multiGate []Gate

func (m multiGate) Check(ctx context.Context, req Call) error {
	for _, g := range m {
		if err := g.Check(ctx, req); err != nil {
			return err
		}
	}
	return nil
}

// Policy is a gate read from a policy file: which tenants may call which
// tools. The file is JSON:
//
//	{
//	  "default": "allow",                    // or "deny": tenants not listed
//	  "tenants": {
//	    "t-1": {"allow": ["pack.read-*"], "deny": ["pack.read-secrets"]}
//	  }
//	}
//
// For a listed tenant a matching deny pattern refuses; then, when allow is
// given, only a matching allow pattern lets the call through. A pattern is a
// tool id, or a prefix ending in "*". Checks carry no tenant and are not
// subject to the policy.
type Policy struct {
	Default string                  `json:"default"`
	Tenants map[string]TenantPolicy `json:"tenants"`
}

// TenantPolicy is one tenant's rules.
type TenantPolicy struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// LoadPolicy reads and checks a policy file.
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	return parsePolicy(data, path)
}

// parsePolicy reads and checks a policy document (name says where from).
func parsePolicy(data []byte, path string) (*Policy, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("reading the policy %s: %w", path, err)
	}
	switch p.Default {
	case "":
		p.Default = "allow"
	case "allow", "deny":
	default:
		return nil, fmt.Errorf("the policy's default must be \"allow\" or \"deny\", not %q", p.Default)
	}
	for tenant, tp := range p.Tenants {
		for _, pat := range append(append([]string(nil), tp.Allow...), tp.Deny...) {
			if pat == "" || strings.Contains(strings.TrimSuffix(pat, "*"), "*") {
				return nil, fmt.Errorf("the policy for tenant %q has a bad pattern %q", tenant, pat)
			}
		}
	}
	return &p, nil
}

func matches(patterns []string, id string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(id, prefix) || p == id {
			return true
		}
	}
	return false
}

// Check implements Gate.
func (p *Policy) Check(_ context.Context, req Call) error {
	if req.Target != TargetTool {
		return nil
	}
	tp, listed := p.Tenants[req.TenantID]
	deny := &Deny{Code: RefusalGateDenied, Reason: fmt.Sprintf("The policy does not allow this tenant to call %s", req.ID)}
	if !listed {
		if p.Default == "deny" {
			return deny
		}
		return nil
	}
	if matches(tp.Deny, req.ID) || (tp.Allow != nil && !matches(tp.Allow, req.ID)) {
		return deny
	}
	return nil
}
