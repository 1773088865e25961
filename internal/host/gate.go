package host

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Gate decides whether a call may run, after its message parsed and its
// target resolved, before any pack code runs; it sees the Call, never the
// input. It returns nil to allow, a *Deny to refuse, and any
// other error when it cannot decide: the call is then refused (fail closed).
type Gate interface {
	Check(ctx context.Context, call Call) error
}

// Refusal codes: what a caller is told when a call did not run.
const (
	RefusalTenantMismatch = "pack-tenant-mismatch"
	RefusalGateDenied     = "pack-gate-denied"
	RefusalGateFailed     = "pack-gate-failed"
	// RefusalOverloaded: the call's memory did not fit in the service's
	// memory budget (sandbox.ErrMemoryBudget); try again later.
	RefusalOverloaded = "overloaded"
	// RefusalTenantShare: the call's tenant holds its share of the service
	// while other tenants call (an Admission refused it); try again later.
	RefusalTenantShare = "tenant-share"
	// RefusalTenantBudget: the call's tenant has spent its budget over
	// time (the policy's budget: Budget); try again after RetryAfter.
	RefusalTenantBudget = "tenant-budget"
)

// Deny is a gate's refusal. Code is one of the refusal codes (empty means
// RefusalGateDenied); Reason is shown to the caller, so it must not carry
// anything the caller may not see.
type Deny struct {
	Code   string
	Reason string
	// RetryAfter, when set, is how long the caller should wait before it
	// tries again (a budget's bucket says when it will allow a call).
	RetryAfter time.Duration
}

func (d *Deny) Error() string { return d.Reason }

// Refusal says why a parsed call was refused before any pack code ran.
type Refusal struct {
	Code       string        // a refusal code
	Reason     string        // safe to show the caller
	RetryAfter time.Duration // when to try again (0: the face's own)
	Err        error         // what the gate returned (for logs, never for the caller)
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Reason }
func (r *Refusal) Unwrap() error { return r.Err }

// consultGate asks the request's tenant pin, the gate and the request's
// admission (in that order) whether a call may run; when it may, the
// grant's Release (never nil) gives back the call's share when the call
// ends.
func (p *Pack) consultGate(ctx context.Context, req *Request, call *Call) (g Grant, r *Refusal) {
	var err error
	if req.TenantPin != "" {
		err = tenantPin(req.TenantPin).Check(ctx, *call) // the face's pin, before any gate
	}
	if err == nil && p.gate != nil {
		err = p.gate.Check(ctx, *call)
	}
	if req.Admit != nil && err == nil {
		g, err = req.Admit(*call)
	}
	if g.Release == nil || err != nil {
		g.Release = func() {}
	}
	if err == nil {
		return g, nil
	}
	return g, refusalFor(err)
}

// refusalFor is the refusal of what a pin, gate or admission returned.
func refusalFor(err error) *Refusal {
	var d *Deny
	if errors.As(err, &d) {
		code := d.Code
		if code == "" {
			code = RefusalGateDenied
		}
		return &Refusal{Code: code, Reason: d.Reason, RetryAfter: d.RetryAfter, Err: err}
	}
	return &Refusal{Code: RefusalGateFailed, Reason: "the gate could not decide", Err: err}
}

// Admission gives a call its share of the service once its tenant is
// known, or refuses it with a *Deny. It is called after the tenant pin and
// the gate allowed the call, and must not block.
type Admission func(call Call) (Grant, error)

// Grant is a call's share of the service: Release (nil: nothing) gives it
// back when the call ends; Memory (nil: none) is the account the memory of
// the call's instance is charged to while it runs, whose share bounds it
// (a call that does not fit is refused with RefusalTenantShare); MaxFuel
// (0: none) caps the call's fuel below its target's own limits.fuel (it
// only tightens it: a budget's maxFuelPerCall); Fuel (nil: none) is told
// of the fuel the call spends as it spends it (sandbox.Request.Fuel).
type Grant struct {
	Release func()
	Memory  *MemoryAccount
	MaxFuel int64
	Fuel    *atomic.Int64
	// Obligations are the conditions the call was admitted under, which
	// the admission keeps (a budget's rate limits): the call's outcome
	// carries them (Outcome.Obligations), and its audit line says them.
	Obligations []Obligation
}

// Obligation is a condition a call was admitted under, as khive's gate
// returns with an Allow (its RateLimit{window_secs, max}); packd's are
// kept, not only declared. Kind is "rateLimit": at most Max of Resource
// ("calls", "fuel", "egressRequests", "egressBytes") every WindowSecs,
// over the tenant's calls, with a debt paid before its next; or "limit":
// at most Max of Resource ("fuel") in this one call.
type Obligation struct {
	Kind       string  `json:"kind"`
	Resource   string  `json:"resource"`
	WindowSecs float64 `json:"windowSecs,omitempty"`
	Max        float64 `json:"max"`
}

// tenantPin is a Request's TenantPin: a tool call whose ctx.tenantId
// names another tenant is refused with RefusalTenantMismatch. (A
// check-invoke carries no ctx; the transport checks its tenant header.)
type tenantPin string

func (t tenantPin) Check(_ context.Context, req Call) error {
	if req.Target == TargetTool && req.TenantID != string(t) {
		return &Deny{Code: RefusalTenantMismatch, Reason: "This pack service is pinned to another tenant than the call's ctx.tenantId"}
	}
	return nil
}
