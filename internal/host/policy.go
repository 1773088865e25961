package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
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
// tools, and what each may spend over time. The file is JSON:
//
//	{
//	  "default": "allow",                    // or "deny": tenants not listed
//	  "defaultBudget": {"fuelPerSecond": 2e9}, // tenants without a budget of their own
//	  "tenants": {
//	    "t-1": {"allow": ["pack.read-*"], "deny": ["pack.read-secrets"],
//	            "budget": {"callsPerSecond": 50}}
//	  }
//	}
//
// For a listed tenant a matching deny pattern refuses; then, when allow is
// given, only a matching allow pattern lets the call through. A pattern is a
// tool id, or a prefix ending in "*". Checks carry no tenant and are not
// subject to the policy. Budgets (Budget) are the service's to keep: the
// gate only reads them.
type Policy struct {
	Default       string                  `json:"default"`
	DefaultBudget *Budget                 `json:"defaultBudget"`
	Tenants       map[string]TenantPolicy `json:"tenants"`
}

// TenantPolicy is one tenant's rules.
type TenantPolicy struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
	// Budget, when set, is the tenant's in place of the policy's
	// defaultBudget ({}: none at all).
	Budget *Budget `json:"budget"`
}

// Budget is what a tenant's tool calls may spend over time: fuel a second
// (a token bucket holding FuelBurst, a second's worth when 0), calls a
// second (a bucket of a second's worth, at least one call), outbound
// requests a minute and outbound bytes an hour (buckets of a minute's and
// an hour's worth), and a cap on one call's fuel that only tightens a
// tool's own limits.fuel. 0 (or absent) leaves a dimension unbounded.
type Budget struct {
	FuelPerSecond           float64 `json:"fuelPerSecond"`
	FuelBurst               float64 `json:"fuelBurst"`
	CallsPerSecond          float64 `json:"callsPerSecond"`
	EgressRequestsPerMinute float64 `json:"egressRequestsPerMinute"`
	EgressBytesPerHour      float64 `json:"egressBytesPerHour"`
	MaxFuelPerCall          int64   `json:"maxFuelPerCall"`
}

// BudgetFor is the budget of a tenant's tool calls: its own, else the
// policy's default; nil when there is none.
func (p *Policy) BudgetFor(tenant string) *Budget {
	if p == nil {
		return nil
	}
	if tp, ok := p.Tenants[tenant]; ok && tp.Budget != nil {
		return tp.Budget
	}
	return p.DefaultBudget
}

// check says what is wrong with a budget, naming the field (where says
// whose budget it is).
func (b *Budget) check(where string) error {
	if b == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"fuelPerSecond", b.FuelPerSecond}, {"fuelBurst", b.FuelBurst}, {"callsPerSecond", b.CallsPerSecond},
		{"egressRequestsPerMinute", b.EgressRequestsPerMinute}, {"egressBytesPerHour", b.EgressBytesPerHour},
		{"maxFuelPerCall", float64(b.MaxFuelPerCall)}} {
		if f.v < 0 || math.IsInf(f.v, 0) || f.v > maxBudget {
			return fmt.Errorf("the policy's %s.%s must be a number from 0 to %g, not %g", where, f.name, float64(maxBudget), f.v)
		}
	}
	if b.FuelBurst > 0 && b.FuelPerSecond == 0 {
		return fmt.Errorf("the policy's %s.fuelBurst needs a fuelPerSecond", where)
	}
	return nil
}

// maxBudget is the largest number a budget takes (fuel a second at 1e18
// is unbounded in practice, and keeps the buckets' sums finite).
const maxBudget = 1e18

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
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, fmt.Errorf("reading the policy %s: its %s must be %s, not %s", path, te.Field, jsonKind(te.Type), te.Value)
		}
		return nil, fmt.Errorf("reading the policy %s: %w", path, err)
	}
	if err := p.DefaultBudget.check("defaultBudget"); err != nil {
		return nil, err
	}
	switch p.Default {
	case "":
		p.Default = "allow"
	case "allow", "deny":
	default:
		return nil, fmt.Errorf("the policy's default must be \"allow\" or \"deny\", not %q", p.Default)
	}
	for tenant, tp := range p.Tenants {
		if err := tp.Budget.check(fmt.Sprintf("tenants[%q].budget", tenant)); err != nil {
			return nil, err
		}
		for _, pat := range append(append([]string(nil), tp.Allow...), tp.Deny...) {
			if pat == "" || strings.Contains(strings.TrimSuffix(pat, "*"), "*") {
				return nil, fmt.Errorf("the policy for tenant %q has a bad pattern %q", tenant, pat)
			}
		}
	}
	return &p, nil
}

// jsonKind is how the policy's errors name a Go type a JSON value had to
// be.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Float64:
		return "a number"
	case reflect.Int64, reflect.Int:
		return "a whole number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	}
	return "an object"
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
