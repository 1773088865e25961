package host

import (
	"math"
	"slices"

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

// correlationKeys are ctx's key of each Correlation field, in the order
// records and audit lines list them. A new correlation field is a field of
// Correlation, a key here, and its place in values and readCorrelation.
var correlationKeys = [...]string{"tenantId", "projectId", "orgId", "runId", "requestId"}

const correlationCount = len(correlationKeys)

// values are the fields in correlationKeys' order.
func (c Correlation) values() [correlationCount]string {
	return [...]string{c.TenantID, c.ProjectID, c.OrgID, c.RunID, c.RequestID}
}

// CorrelationKeys are the ctx keys of Correlation's fields, in order.
func CorrelationKeys() []string { return slices.Clone(correlationKeys[:]) }

// Pair is a correlation field's ctx key and its value.
type Pair struct{ Key, Value string }

// Pairs are every correlation key and its value (empty ones too), in
// order: an array, so that writing a call record allocates nothing.
func (c Correlation) Pairs() (out [correlationCount]Pair) {
	for i, v := range c.values() {
		out[i] = Pair{correlationKeys[i], v}
	}
	return out
}

// readCorrelation reads the correlation fields of a call's ctx; a field
// that is missing or not a string is empty.
func readCorrelation(ctx *ojson.Object) Correlation {
	var v [correlationCount]string
	for i, k := range correlationKeys {
		x, _ := ctx.Get(k)
		v[i], _ = x.(string)
	}
	return Correlation{TenantID: v[0], ProjectID: v[1], OrgID: v[2], RunID: v[3], RequestID: v[4]}
}

// Usage is what a call's pack code used.
type Usage struct {
	Fuel        int64 // fuel burnt; 0 when no pack code ran
	MemoryBytes int64 // its instance's linear memory when the call ended: its peak
	// Instance is what it ran in: "hit" (an idle pooled instance), "miss"
	// (one made for it, then pooled) or "fresh" (made for it alone); ""
	// when no pack code ran. ResetSeconds is how long the pooled
	// instance's reset to its snapshot took after the call.
	Instance     string
	ResetSeconds float64
	// CPUSeconds is how long its pack code ran, less the time it slept or
	// waited for an outbound request (sandbox.Reply.CPUSeconds).
	CPUSeconds float64
	// Egress is what its pack code did on the network (zero when its
	// module cannot send requests).
	Egress EgressSummary
}

// CPUMicros is CPUSeconds in whole microseconds: what usage is summed in
// (integers, so that sums are exact).
func (u Usage) CPUMicros() int64 { return int64(math.Round(u.CPUSeconds * 1e6)) }

// MemoryKiBMs is its peak memory held over its CPU time, in KiB·ms
// (whole): memory × time, as usage sums it.
func (u Usage) MemoryKiBMs() int64 { return u.MemoryBytes >> 10 * u.CPUMicros() / 1000 }
