package host

import (
	"context"
	"errors"
)

// GateRequest is what a gate decides on: the resolved target and the call's
// identity, never its input.
type GateRequest struct {
	Target    string // "tool" or "check"
	ID        string
	Version   string
	TenantID  string // empty for a check (a check-invoke carries no ctx)
	ProjectID string
	OrgID     string
	RunID     string
}

// Gate decides whether a call may run. It returns nil to allow, an error
// wrapping ErrDenied to deny, and any other error when it cannot decide:
// the dispatcher then refuses the call (fail closed).
type Gate interface {
	Check(ctx context.Context, req GateRequest) error
}

// ErrDenied is wrapped by a gate's deny.
var ErrDenied = errors.New("denied")

// Refusal says why a parsed call was refused before any pack code ran. Denied
// tells a deny from a gate that failed (fail closed); Reason is safe to show
// the caller.
type Refusal struct {
	Denied bool
	Reason string
	Err    error
}

func (r *Refusal) Error() string { return r.Reason }
func (r *Refusal) Unwrap() error { return r.Err }

func (p *Pack) consultGate(ctx context.Context, req GateRequest) *Refusal {
	if p.gate == nil {
		return nil
	}
	err := p.gate.Check(ctx, req)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrDenied):
		return &Refusal{Denied: true, Reason: err.Error(), Err: err}
	default:
		return &Refusal{Reason: "the gate could not decide", Err: err}
	}
}
