package host

import (
	"github.com/kindgi/packd/internal/ojson"
)

// Target is what a call runs: a tool or a guardrail check.
type Target string

// The targets.
const (
	TargetTool  Target = "tool"
	TargetCheck Target = "check"
)

// Call is a request's target and identity, read once from its message. It
// is what a gate decides on, what an Outcome reports, and what every hook,
// record, audit line and metric of the call is made from. It never holds
// the call's input, config, trace, secrets or env values.
type Call struct {
	Target Target
	ID     string
	// Version is the tool's version as resolved (what the caller named
	// until the tool is found; "" for a check or an unversioned tool).
	Version string
	Correlation
}

// Correlation is who a call is for, from its ctx. A check-invoke carries
// no ctx: its Correlation is empty.
type Correlation struct {
	TenantID, ProjectID, OrgID, RunID, RequestID string
}

// correlationFields are ctx's key of each Correlation field, in the order
// records and audit lines list them: a new correlation field is a field of
// Correlation and a line here.
var correlationFields = [...]struct {
	key string
	at  func(*Correlation) *string
}{
	{"tenantId", func(c *Correlation) *string { return &c.TenantID }},
	{"projectId", func(c *Correlation) *string { return &c.ProjectID }},
	{"orgId", func(c *Correlation) *string { return &c.OrgID }},
	{"runId", func(c *Correlation) *string { return &c.RunID }},
	{"requestId", func(c *Correlation) *string { return &c.RequestID }},
}

// CorrelationKeys are the ctx keys of Correlation's fields, in order.
func CorrelationKeys() []string {
	keys := make([]string, len(correlationFields))
	for i, f := range correlationFields {
		keys[i] = f.key
	}
	return keys
}

// Each calls f with every correlation key and its value (empty ones too),
// in order.
func (c *Correlation) Each(f func(key, value string)) {
	for _, cf := range correlationFields {
		f(cf.key, *cf.at(c))
	}
}

// readCorrelation reads the correlation fields of a call's ctx; a field
// that is missing or not a string is empty.
func readCorrelation(ctx *ojson.Object) Correlation {
	var c Correlation
	for _, cf := range correlationFields {
		v, _ := ctx.Get(cf.key)
		*cf.at(&c), _ = v.(string)
	}
	return c
}

// Usage is what a call's pack code used.
type Usage struct {
	Fuel        int64 // fuel burnt; 0 when no pack code ran
	MemoryBytes int64 // its instance's linear memory when the call ended
}
