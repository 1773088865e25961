package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host/internal/egress"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/replay"
	"github.com/kindgi/packd/internal/sandbox"
)

// A call's time limit: DefaultTimeout when the caller names none, and
// never more than MaxTimeout.
const (
	DefaultTimeout = 120 * time.Second
	MaxTimeout     = 24 * time.Hour
)

// callTimeout is the one place a call's time limit is decided: what the
// caller named (≤ 0: nothing), bounded.
func callTimeout(named time.Duration) time.Duration {
	switch {
	case named <= 0:
		return DefaultTimeout
	case named > MaxTimeout:
		return MaxTimeout
	}
	return named
}

// Outcome is what one dispatch produced: the response message, and the
// call as parsed with what it used, for its hooks.
type Outcome struct {
	// Response is the protocol response message (result, check-result or
	// error). It is nil only when Refusal is set.
	Response []byte
	// Parsed is false when the message did not parse: Call is empty, and
	// there is no call record.
	Parsed bool
	Call   Call
	// Code is the error code, empty on success.
	Code abi.Code
	// Refusal is set when the gate refused the call: no response message then.
	Refusal *Refusal
	Usage   Usage
	// Obligations are what its admission applied (Grant.Obligations).
	Obligations []Obligation
	// Record is the call's record, when the pack records it
	// (Config.Record) and its pack code ran; RecordSkipped says why a call
	// to be recorded has none (RecordTooLarge, …).
	Record        *replay.Record
	RecordSkipped string
	secrets       *replay.Secrets // the record's, for its request message
}

// OK reports whether the call produced a result.
func (o *Outcome) OK() bool { return o.Code == "" && o.Refusal == nil }

func (o *Outcome) fail(e *abi.Error) *Outcome {
	if o.Refusal != nil { // refused on the way: no response message
		return o
	}
	o.Code = e.Code
	o.Response = e.Encode()
	return o
}

// Request is one call for Dispatch: the protocol request message, and
// what its face decided of it.
type Request struct {
	Body []byte
	// Timeout is the time limit the caller named (≤ 0: none; see
	// DefaultTimeout and MaxTimeout); it starts once the message has
	// parsed.
	Timeout time.Duration
	// TenantPin, when set, refuses a tool call whose ctx.tenantId names
	// another tenant (RefusalTenantMismatch), before and whatever the
	// pack's gate: a face that pins its tenant (an HTTP header) pins the
	// body's half with it. A check-invoke carries no ctx: the face checks
	// its tenant.
	TenantPin string
	// Admit, when set, gives the call its share of the service once its
	// tenant is known, after the pin and the gate allowed it.
	Admit Admission
	// TraceID is the call's trace id (32 hex digits; "": none), which its
	// pack code's output lines carry (GuestLine).
	TraceID string
}

// Dispatch runs one request message; ctx carries the caller's
// cancellation.
func (p *Pack) Dispatch(ctx context.Context, req Request) *Outcome {
	o := &Outcome{}
	doc, err := ojson.Decode(req.Body)
	if err != nil {
		return o.fail(&abi.Error{Code: abi.CodeMalformedMessage, Message: "Request body is not valid JSON"})
	}
	msg, ok := doc.(*ojson.Object)
	if !ok {
		return o.fail(&abi.Error{Code: abi.CodeMalformedMessage, Message: "Message must be a JSON object"})
	}
	if v, ok := msg.Get("v"); !ok || v != float64(abi.ProtocolVersion) {
		return o.fail(&abi.Error{Code: abi.CodeUnknownProtocolVersion, Message: "Expected protocol v2, got " + jsText(v, ok)})
	}
	kind, hasKind := msg.Get("kind")
	// The deadline covers everything from here: the gate, validation, the
	// guest, decoding and validating what it answered.
	ctx, release := withDeadline(ctx, callTimeout(req.Timeout))
	defer release()
	switch kind {
	case abi.KindInvoke:
		return p.invoke(ctx, &req, msg, o).recordMessage(msg)
	case abi.KindCheckInvoke:
		return p.checkInvoke(ctx, &req, msg, o).recordMessage(msg)
	}
	return o.fail(&abi.Error{Code: abi.CodeUnexpectedMessageKind, Message: "Unknown request kind " + jsText(kind, hasKind)})
}

// recordMessage adds the request message to the call's record.
func (o *Outcome) recordMessage(msg *ojson.Object) *Outcome {
	if o.Record != nil {
		recordMessage(o.Record, msg, o.secrets)
		o.secrets = nil
		if o.Record.Overflowed() {
			o.Record, o.RecordSkipped = nil, RecordTooLarge
		}
	}
	return o
}

// jsText is how a JavaScript template literal shows JSON.stringify(v).
func jsText(v any, present bool) string {
	if !present {
		return "undefined"
	}
	return string(ojson.Encode(v))
}

func objectField(msg *ojson.Object, key string) (*ojson.Object, bool) {
	v, _ := msg.Get(key)
	o, ok := v.(*ojson.Object)
	return o, ok
}

func stringField(o *ojson.Object, key string) (string, bool) {
	v, _ := o.Get(key)
	s, ok := v.(string)
	return s, ok
}

// named reads msg[key] as an object and its string id ("" when either is
// missing or of another type).
func named(msg *ojson.Object, key string) (*ojson.Object, string) {
	obj, _ := objectField(msg, key)
	if obj == nil {
		return nil, ""
	}
	id, _ := stringField(obj, "id")
	return obj, id
}

func malformed(msg string) *abi.Error {
	return &abi.Error{Code: abi.CodeMalformedMessage, Message: msg}
}

func (p *Pack) invoke(ctx context.Context, req *Request, msg *ojson.Object, o *Outcome) *Outcome {
	toolObj, id := named(msg, "tool")
	if id == "" {
		return o.fail(malformed("`tool.id` is required"))
	}
	version, hasVersion := "", false
	if v, ok := toolObj.Get("version"); ok {
		if version, hasVersion = v.(string); !hasVersion {
			return o.fail(malformed("`tool.version` must be a string"))
		}
	}
	callCtx, ok := objectField(msg, "ctx")
	if ok {
		_, okT := stringField(callCtx, "tenantId")
		_, okR := stringField(callCtx, "runId")
		ok = okT && okR
	}
	if !ok {
		return o.fail(malformed("`ctx` needs string `tenantId` and `runId`"))
	}
	o.Parsed, o.Call = true, Call{Target: TargetTool, ID: id, Version: version, Correlation: readCorrelation(callCtx)}
	t := &o.Call

	entry, rerr := p.resolveTool(id, version, hasVersion)
	if rerr != nil {
		return o.fail(rerr)
	}
	t.Version = entry.spec.Version
	grant, r := p.consultGate(ctx, req, t)
	defer grant.Release()
	o.Obligations = grant.Obligations
	if r != nil {
		o.Refusal = r
		return o
	}

	input, _ := msg.Get("input")
	entry.in.FillDefaults(input)
	issues, more := entry.in.Validate(input)
	if e := t.late(ctx); e != nil {
		return o.fail(e)
	}
	if issues != nil {
		e := t.errorFor(abi.CodeInputValidationFailed, fmt.Sprintf("Tool %q input failed validation%s", id, unlisted(more)))
		e.Issues = issues
		return o.fail(e)
	}
	// The secrets the index binds as credentials are packd's to send:
	// the guest's ctx lacks them.
	guestCtx := withoutBoundSecrets(callCtx, p.boundSecrets)
	message, marks := abi.EncodeInvokeMarked(id, entry.spec.Version, input, guestCtx)
	body, gerr := p.run(ctx, o, runSpec{call: t, grant: grant, mod: entry.mod, lim: entry.spec.Limits,
		req: sandbox.InvokeRequest(message, marks, input, guestCtx), callCtx: callCtx, traceID: req.TraceID})
	if gerr != nil {
		return o.fail(gerr)
	}
	out, err := ojson.DecodeContext(ctx, body)
	if e := t.late(ctx); e != nil {
		return o.fail(e)
	}
	if err != nil {
		return o.fail(t.errorFor(abi.CodeOutputValidationFailed, fmt.Sprintf("Tool %q handler produced output that is not JSON: %s", id, notJSON(err))))
	}
	issues, more = entry.out.Validate(out)
	if e := t.late(ctx); e != nil {
		return o.fail(e)
	}
	if issues != nil {
		e := t.errorFor(abi.CodeOutputValidationFailed, fmt.Sprintf("Tool %q handler produced output that failed validation%s", id, unlisted(more)))
		e.Issues = issues
		return o.fail(e)
	}
	o.Response = abi.EncodeResult(out)
	return o
}

func (p *Pack) resolveTool(id, version string, named bool) (*tool, *abi.Error) {
	t := &Call{Target: TargetTool, ID: id}
	entries := p.tools[id]
	if len(entries) == 0 {
		return nil, t.errorFor(abi.CodeToolNotInPack, fmt.Sprintf("This pack has no tool %q", id))
	}
	if named {
		for _, e := range entries {
			if e.spec.Version == version {
				return e, nil
			}
		}
		if len(entries) == 1 && entries[0].spec.Version == "" {
			return entries[0], nil // an unversioned tool answers any version
		}
		return nil, t.errorFor(abi.CodeToolVersionMismatch,
			fmt.Sprintf("Tool %q is %s in this pack; the caller asked for %s", id, versionList(entries), version))
	}
	if len(entries) == 1 {
		return entries[0], nil
	}
	return nil, t.errorFor(abi.CodeToolVersionMismatch,
		fmt.Sprintf("Tool %q is %s in this pack; the caller named no version", id, versionList(entries)))
}

func versionList(entries []*tool) string {
	vs := make([]string, len(entries))
	for i, e := range entries {
		vs[i] = e.spec.Version
	}
	return strings.Join(vs, ", ")
}

func (p *Pack) checkInvoke(ctx context.Context, req *Request, msg *ojson.Object, o *Outcome) *Outcome {
	_, id := named(msg, "check")
	if id == "" {
		return o.fail(malformed("`check.id` is required"))
	}
	config, ok := objectField(msg, "config")
	if !ok {
		return o.fail(malformed("`config` must be an object"))
	}
	trace, _ := msg.Get("trace")
	o.Parsed, o.Call = true, Call{Target: TargetCheck, ID: id}
	t := &o.Call

	c := p.checks[id]
	if c == nil {
		return o.fail(t.errorFor(abi.CodeCheckNotInPack, fmt.Sprintf("This pack has no check %q", id)))
	}
	grant, r := p.consultGate(ctx, req, t)
	defer grant.Release()
	o.Obligations = grant.Obligations
	if r != nil {
		o.Refusal = r
		return o
	}
	if c.config != nil {
		issues, more := c.config.Validate(config)
		if e := t.late(ctx); e != nil {
			return o.fail(e)
		}
		if issues != nil {
			at := ""
			if issues[0].InstancePath != "" {
				at = " at " + issues[0].InstancePath
			}
			e := t.errorFor(abi.CodeInputValidationFailed, fmt.Sprintf("Check %q config failed validation%s: %s%s", id, at, issues[0].Message, unlisted(more)))
			e.Issues = issues
			return o.fail(e)
		}
	}
	body, gerr := p.run(ctx, o, runSpec{call: t, grant: grant, mod: c.mod, lim: c.spec.Limits,
		req: sandbox.Request{Body: abi.EncodeCheckInvoke(id, config, trace)}, traceID: req.TraceID})
	if gerr != nil {
		return o.fail(gerr)
	}
	res, err := ojson.DecodeContext(ctx, body)
	if e := t.late(ctx); e != nil {
		return o.fail(e)
	}
	resObj, isObj := res.(*ojson.Object)
	if err != nil || !isObj {
		return o.fail(t.errorFor(abi.CodeCheckShapeInvalid, fmt.Sprintf("Check %q returned a result that is not an object: %s%s", id, excerpt(body), checkShape)))
	}
	if passed, _ := resObj.Get("passed"); passed != true && passed != false {
		return o.fail(t.errorFor(abi.CodeCheckShapeInvalid, fmt.Sprintf("Check %q returned a result without a boolean `passed`: %s%s", id, excerpt(body), checkShape)))
	}
	o.Response = abi.EncodeCheckResult(resObj)
	return o
}

// unlisted says how many issues an error leaves out of its list (the
// first schema.MaxIssues are listed), or nothing when it lists them all.
func unlisted(more int) string {
	if more == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d more issues not listed)", more)
}

// checkShape says what a check's result must be, after what it was.
const checkShape = ` (a check answers an object with a boolean "passed", e.g. {"passed":false,"reason":"too short"})`

// maxExcerpt bounds how much of a guest's answer an error message shows.
const maxExcerpt = 96

// excerpt is the start of a guest's answer, for an error message: at most
// maxExcerpt bytes, cut at a character boundary, "…" when cut.
func excerpt(b []byte) string {
	if len(b) <= maxExcerpt {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	n := maxExcerpt
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return strings.ToValidUTF8(string(b[:n]), "\uFFFD") + "…"
}

// runSpec is what run runs: a resolved call, admitted, on its target's
// module and limits.
type runSpec struct {
	call  *Call
	grant Grant
	mod   *module
	lim   Limits
	// req is the request the guest gets: its message (Body), with where
	// its fields lie when the host knows (sandbox.InvokeRequest).
	req sandbox.Request
	// callCtx is a tool call's ctx (nil for a check): its outbound
	// requests take their idempotency keys and credentials from it.
	callCtx *ojson.Object
	// traceID is the call's trace (Request.TraceID), for its pack code's
	// output lines.
	traceID string
}

// run hands a call's request message to the module under the target's
// limits and the call's deadline (ctx's), and returns what the guest
// answered with StatusOK, or the error message for everything else.
func (p *Pack) run(ctx context.Context, o *Outcome, r runSpec) ([]byte, *abi.Error) {
	t, g, mod, lim, callCtx := r.call, r.grant, r.mod, r.lim, r.callCtx
	if mod.err != nil {
		return nil, t.guestError(mod.path, mod.err, 0)
	}
	if e := t.late(ctx); e != nil {
		return nil, e
	}
	call := lim.request(r.req)
	call.Env, call.Account, call.FuelMeter = p.env, g.Memory, g.Fuel
	if g.MaxFuel > 0 {
		if call.Fuel <= 0 {
			call.Fuel = p.sb.GuestLimits().DefaultFuel
		}
		call.Fuel = min(call.Fuel, g.MaxFuel)
	}
	if p.output != nil {
		who := GuestLine{Call: *t, TraceID: r.traceID}
		call.Output = func(stream string, line []byte) {
			l := who
			l.Stream, l.Line = stream, bytes.TrimSuffix(line, []byte{'\n'})
			p.output(l)
		}
	}
	ctx, cancel := lim.bound(ctx)
	defer cancel()
	var out *egress.Call
	if mod.mod.ImportsHTTP() {
		info := egress.CallInfo{Tool: t.ID, TenantID: t.Correlation.TenantID, Context: ctx, Secret: p.credential(callCtx)}
		if callCtx != nil {
			info.IdempotencyKey, _ = stringField(callCtx, "idempotencyKey")
		}
		out = p.egress.ForCall(lim.Network, info)
		call.Egress = out
	}
	recording := p.records(lim)
	if recording {
		call.Record = p.recordTape()
	}
	rep, err := mod.mod.Call(ctx, call)
	if recording {
		p.keepRecord(o, t, mod, call, rep, err, callCtx)
	}
	o.Usage = Usage{Fuel: rep.FuelUsed, MemoryBytes: rep.MemoryBytes, Instance: rep.Instance, ResetSeconds: rep.ResetSeconds, CPUSeconds: rep.CPUSeconds}
	if out != nil {
		o.Usage.Egress = out.Summary()
	}
	if errors.Is(err, sandbox.ErrMemoryBudget) {
		code := RefusalOverloaded
		if errors.Is(err, sandbox.ErrMemoryShare) {
			code = RefusalTenantShare
		}
		o.Refusal = &Refusal{Code: code, Reason: "overloaded", Err: err}
		return nil, &abi.Error{} // fail keeps the refusal
	}
	if err != nil {
		return nil, t.guestError(mod.path, err, rep.FuelUsed)
	}
	switch rep.Status {
	case abi.StatusNoHandler:
		return nil, t.errorFor(t.shapeCode(), fmt.Sprintf("Module %s has no handler for %s %q", mod.path, t.kind(), t.ID))
	case abi.StatusThrown:
		c := abi.ReadThrown(rep.Body)
		c.Message, c.Stack = mod.lines.Rewrite(c.Message), mod.lines.Rewrite(c.Stack)
		return nil, t.thrown(c)
	}
	return rep.Body, nil
}
