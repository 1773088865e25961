package service

import (
	"context"
	"fmt"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/replay"
)

// One call, whatever face it came through: the checks in the protocol's
// order, the slot, the dispatch, and what is told of it once answered.

// Refusal codes: why the service refused a call before its pack code ran.
// Each is the reason packd_refusals_total counts; a face says each its own
// way (HTTP: a status and, for some, Retry-After).
const (
	CodeDraining       = "draining"
	CodeMissingEnv     = "missing-env"
	CodeOverloaded     = host.RefusalOverloaded
	CodeTenantShare    = host.RefusalTenantShare
	CodeTenantBudget   = host.RefusalTenantBudget
	CodeTenantMismatch = host.RefusalTenantMismatch
	CodeGateDenied     = host.RefusalGateDenied
	CodeGateFailed     = host.RefusalGateFailed
)

// Refusal is a call refused before its pack code ran.
type Refusal struct {
	// Code is one of the Code… constants, or a face's own (Request.Body's).
	Code string
	// Message is host's reason for CodeGateDenied, CodeGateFailed and a
	// message's CodeTenantMismatch; else "" (the face says its own).
	Message string
	// MissingEnv names the required env names that are not set (CodeMissingEnv).
	MissingEnv []string
	// NoTenant says a CodeTenantMismatch claimed no tenant at all.
	NoTenant bool
	// RetryAfter is when to try again (CodeTenantBudget: when its
	// tenant's budget allows a call); 0: the face's own.
	RetryAfter time.Duration
}

// RetryAfterSeconds is the whole seconds a refused caller is told to
// wait (Retry-After): RetryAfter rounded up, and at least one.
func (r *Refusal) RetryAfterSeconds() int {
	return max(1, int((r.RetryAfter+time.Second-1)/time.Second))
}

// Face is the front a call came through.
type Face interface {
	// Name names the face in metrics (the face label), audit lines and
	// spans: "http", "mcp", "cli".
	Name() string
	// Status is the status the face answers with, for a refusal's code or
	// "" for an answer: what the call's event, audit line, metrics and
	// span say it was answered with.
	Status(code string) int
}

// MaxTimeout is the longest a call may run: a longer Request.Timeout is
// bounded to it.
const MaxTimeout = host.MaxTimeout

// Request is one call as a face hands it over.
type Request struct {
	// Body reads the call's message (the protocol's invoke body). It is
	// called once the service's own checks have passed and before the call
	// takes its slot of the concurrency cap, so a slow body holds no slot;
	// a refusal it returns (a face's own code) answers the call.
	Body func() ([]byte, *Refusal)
	// Timeout is the caller's limit on the call (0: none named; host's
	// default applies).
	Timeout time.Duration
	// ClaimedTenant is every tenant the caller claimed outside the message
	// (HTTP: the kindgi-tenant-id header's values), checked against the pin.
	ClaimedTenant []string
	// TraceParent and TraceState are the caller's W3C trace context ("": none).
	TraceParent, TraceState string
	// Face is the front the call came through.
	Face Face
}

// Answer is what a call is answered with: Response (the protocol's
// answer) or Refusal. The face writes it, then calls Done.
type Answer struct {
	Response []byte
	Refusal  *Refusal
	// Duration is the time from the call's admission to its answer;
	// ArtifactVersion that of the pack it ran on.
	Duration        time.Duration
	ArtifactVersion string
	end             *callEnd
}

// callEnd is what is left to do once a call's answer is written.
type callEnd struct {
	s      *Service
	face   Face
	g      *generation // nil: none taken
	span   *callSpan   // nil: not traced
	event  Event
	parsed bool // the event is told to the hooks
	record *replay.Record
	skip   string
}

// Done tells the call's hooks, keeps its record and ends its span: call
// it once the answer is written (a record and a hook never hold up an
// answer). Safe on a zero Answer.
func (a Answer) Done() {
	e := a.end
	if e == nil {
		return
	}
	var attrs *spanAttrs
	if e.span != nil && e.parsed && e.span.IsRecording() {
		g := e.g.pack
		attrs = spanAttrsPool.Get().(*spanAttrs)
		defer attrs.free()
		attrs.kv = describeCall(e.span, e.event, e.event.Target == host.TargetTool && g.HasTool(e.event.ID) || e.event.Target == host.TargetCheck && g.HasCheck(e.event.ID), attrs.kv[:0])
	}
	if rr := e.s.cfg.Records; rr != nil && (e.record != nil || e.skip != "") {
		rr.Keep(e.record, e.skip, e.event.ArtifactVersion)
	}
	if e.parsed {
		e.s.runHooks(e.event)
	}
	if e.g != nil {
		e.g.release()
	}
	if e.span != nil {
		endCall(e.span, e.event.Status, attrs)
	}
}

// Call runs one call: the tenant's claim against the pin, then, in the
// protocol's order, drain and missing env, the concurrency cap, the body
// (Request.Body), a slot, and host.Dispatch with the body's half of the pin
// and the tenant's fair share. The call runs, and its hooks are told, on
// the pack served when it came in, whatever a reload does meanwhile.
func (s *Service) Call(ctx context.Context, req Request) Answer {
	end := &callEnd{s: s, face: req.Face}
	// A panic (a face's Body, a bug) gives back what the call holds before
	// it goes on up: the slot (below) and the generation.
	defer func() {
		if p := recover(); p != nil {
			if end.g != nil {
				end.g.release()
			}
			if end.span != nil {
				end.span.End()
			}
			panic(p)
		}
	}()
	if r := s.CheckTenant(req.ClaimedTenant); r != nil {
		// Told to the hooks (an audit line), though the message was never read.
		end.event = Event{Time: time.Now(), Face: req.Face.Name(), Outcome: r.Code, Status: req.Face.Status(r.Code),
			Call: host.Call{Correlation: host.Correlation{TenantID: only(req.ClaimedTenant)}}, TraceID: traceIDFrom(req.TraceParent),
			ArtifactVersion: s.gen.Load().artifactVersion}
		s.runHooks(end.event)
		return s.refuse(ctx, end, r)
	}
	// The span of the call (Config.Tracing) ends once the answer is
	// written; egress spans are its children.
	if t := s.cfg.Tracing; t != nil {
		ctx, end.span = t.startCall(ctx, req.Face.Name(), req.TraceParent, req.TraceState)
	}
	g := s.acquire()
	end.g = g
	if r := s.unavailable(g); r != nil {
		return s.refuse(ctx, end, r)
	}
	// The checks keep the protocol's order (the cap before the body), but
	// the slot is taken only once the body is in.
	if len(s.sem) == cap(s.sem) {
		return s.refuse(ctx, end, s.overloaded())
	}
	body, r := req.Body()
	if r != nil {
		return s.refuse(ctx, end, r)
	}
	select {
	case s.sem <- struct{}{}:
	default:
		return s.refuse(ctx, end, s.overloaded())
	}
	// The slot is for the work: it is free again once the answer is built,
	// before the answer is written to a caller that may read it slowly, or
	// never.
	admitted := time.Now()
	// The call's trace: its span's (one the call began when the caller
	// sent none), else the caller's.
	traceID := traceIDFrom(req.TraceParent)
	if end.span != nil {
		if sc := end.span.SpanContext(); sc.IsValid() {
			traceID = sc.TraceID().String()
		}
	}
	out := s.dispatch(ctx, g.pack, host.Request{Body: body, Timeout: req.Timeout, TraceID: traceID})
	end.record, end.skip = out.Record, out.RecordSkipped
	if out.Parsed {
		s.budgets.spend(out.Call, out.Usage)
	}
	elapsed := time.Since(admitted)
	e := &end.event
	*e = Event{
		Time: admitted, Face: req.Face.Name(), Parsed: out.Parsed, Call: out.Call, Usage: out.Usage, Obligations: out.Obligations,
		Outcome: "ok", Duration: elapsed,
		TraceID:         traceID,
		ArtifactVersion: g.artifactVersion,
	}
	if out.Code != "" {
		e.Outcome = string(out.Code)
	}
	// With tracing, the lines name the call's span.
	if end.span != nil {
		if sc := end.span.SpanContext(); sc.IsValid() {
			e.SpanID = sc.SpanID().String()
		}
	}
	if e.SpanID == "" {
		e.SpanID = newSpanID()
	}
	end.parsed = out.Parsed
	if r := out.Refusal; r != nil {
		rf := s.hostRefusal(r)
		e.Outcome, e.Status = rf.Code, req.Face.Status(rf.Code)
		if rf.Code == CodeTenantShare || rf.Code == CodeTenantBudget {
			pause(ctx, s.cfg.TenantSharePause)
		}
		return s.refuse(ctx, end, rf)
	}
	e.Status = req.Face.Status("")
	return Answer{Response: out.Response, Duration: elapsed, ArtifactVersion: g.artifactVersion, end: end}
}

// dispatch runs a call that holds a slot, and frees the slot.
func (s *Service) dispatch(ctx context.Context, p *host.Pack, req host.Request) *host.Outcome {
	m := s.cfg.Metrics
	if m != nil {
		m.inFlight.Inc()
	}
	defer func() {
		<-s.sem
		if m != nil {
			m.inFlight.Dec()
		}
	}()
	req.TenantPin = s.cfg.TenantID // the body's half of the pin; the claim's is checked in Call
	req.Admit = s.admit
	return p.Dispatch(ctx, req)
}

// hostRefusal is the refusal of a call host.Dispatch refused. A code this
// service does not know fails closed, as a gate that could not decide, and
// a gate's failure is said in the log.
func (s *Service) hostRefusal(r *host.Refusal) *Refusal {
	switch r.Code {
	case CodeOverloaded, CodeTenantShare, CodeTenantBudget:
		return &Refusal{Code: r.Code, RetryAfter: r.RetryAfter}
	case CodeTenantMismatch, CodeGateDenied:
		return &Refusal{Code: r.Code, Message: r.Reason}
	}
	err, reason := r.Err, r.Reason
	if r.Code != CodeGateFailed {
		err = fmt.Errorf("the gate refused with unknown code %q: %v", r.Code, r.Err)
		reason = "The call could not be checked"
	}
	s.cfg.Log.Line("error", "The gate failed; the call was refused", Field{"event", "gate-failed"},
		Field{"kind", "gate-failed"}, Field{"error", fmt.Sprint(err)})
	return &Refusal{Code: CodeGateFailed, Message: reason}
}

// refuse answers a refusal: counted, and said on the call's span.
func (s *Service) refuse(ctx context.Context, end *callEnd, r *Refusal) Answer {
	s.cfg.Metrics.refused(end.face, r.Code)
	if end.span != nil {
		refusedSpan(end.span, r.Code)
	}
	if !end.parsed {
		end.event.Status = end.face.Status(r.Code) // for the span
	}
	a := Answer{Refusal: r, end: end}
	if end.g != nil {
		a.ArtifactVersion = end.g.artifactVersion
	}
	return a
}

func (s *Service) overloaded() *Refusal {
	if s.draining.Load() {
		return &Refusal{Code: CodeDraining}
	}
	return &Refusal{Code: CodeOverloaded}
}

// pause waits d, or until ctx is done: a call refused for its tenant's
// share or budget is answered after Config.TenantSharePause, its slot already free,
// so that a tenant retrying its refusals at once cannot turn them into load
// that slows the other tenants' calls.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
