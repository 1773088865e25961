package host

import (
	"context"
	"errors"
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
)

// Deny is a gate's refusal. Code is one of the refusal codes (empty means
// RefusalGateDenied); Reason is shown to the caller, so it must not carry
// anything the caller may not see.
type Deny struct {
	Code   string
	Reason string
}

func (d *Deny) Error() string { return d.Reason }

// Refusal says why a parsed call was refused before any pack code ran.
type Refusal struct {
	Code   string // a refusal code
	Reason string // safe to show the caller
	Err    error  // what the gate returned (for logs, never for the caller)
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Reason }
func (r *Refusal) Unwrap() error { return r.Err }

func (p *Pack) consultGate(ctx context.Context, req *Call) *Refusal {
	var err error
	if pin, ok := ctx.Value(pinKey{}).(tenantPin); ok {
		err = pin.Check(ctx, *req) // the transport's pin, before any gate
	}
	if err == nil && p.gate != nil {
		err = p.gate.Check(ctx, *req)
	}
	if err == nil {
		return nil
	}
	var d *Deny
	if errors.As(err, &d) {
		code := d.Code
		if code == "" {
			code = RefusalGateDenied
		}
		return &Refusal{Code: code, Reason: d.Reason, Err: err}
	}
	return &Refusal{Code: RefusalGateFailed, Reason: "the gate could not decide", Err: err}
}

type pinKey struct{}

// WithTenantPin makes the dispatches under ctx refuse a tool call whose
// ctx.tenantId is not tenant (RefusalTenantMismatch), whatever gate the
// pack was loaded with: a transport that pins its tenant by header pins
// the body's half with it.
func WithTenantPin(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, pinKey{}, tenantPin(tenant))
}

// tenantPin is the pin WithTenantPin sets: a tool call whose ctx.tenantId
// names another tenant is refused with RefusalTenantMismatch. (A
// check-invoke carries no ctx; the transport checks its tenant header.)
type tenantPin string

func (t tenantPin) Check(_ context.Context, req Call) error {
	if req.Target == TargetTool && req.TenantID != string(t) {
		return &Deny{Code: RefusalTenantMismatch, Reason: "This pack service is pinned to another tenant than the call's ctx.tenantId"}
	}
	return nil
}
