package host

// Recording a call: which calls a pack records, and the record
// (replay.Record) of one that ran, its secrets redacted.

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/redact"
	"github.com/kindgi/packd/internal/replay"
	"github.com/kindgi/packd/internal/sandbox"
)

// DefaultRecordCallBytes bounds one call's host answers in a record
// (RecordConfig.MaxCallBytes).
const DefaultRecordCallBytes = 1 << 20

// RecordConfig says which calls a pack records (Config.Record).
type RecordConfig struct {
	// Marked records only the targets whose limits.record is true; else
	// every target but those whose limits.record is false.
	Marked bool
	// MaxCallBytes bounds what one call's record holds of host answers and
	// guest input and output (0: DefaultRecordCallBytes, at most
	// sandbox.MaxTapeBytes); a call past it is not recorded
	// (Outcome.RecordSkipped "too-large").
	MaxCallBytes int
}

// RecordMark is a target's limits.record.
type RecordMark int8

// The marks.
const (
	RecordDefault RecordMark = iota // absent: the service decides
	RecordYes                       // true
	RecordNever                     // false
)

// Why a call that was to be recorded was not (Outcome.RecordSkipped).
const (
	RecordTooLarge    = "too-large"   // its answers or input passed RecordConfig.MaxCallBytes
	RecordInterrupted = "interrupted" // its deadline or its caller stopped it: the clock decided, not the code
	RecordOverloaded  = "overloaded"  // the memory budget (or its tenant's share) refused it, or a memory.grow of it: other calls decided
)

// snapshotTape is the encoding of a module's snapshot's tape: one per
// snapshot, made anew when the snapshot is.
// secrets gives what to star out of it, asked once per snapshot.
func (m *module) snapshotTape(t *sandbox.Tape, secrets func() *redact.Set) *replay.SnapshotTape {
	if e := m.snapTape.Load(); e != nil && e.Of(t) {
		return e
	}
	e := replay.NewSnapshotTape(t, secrets())
	m.snapTape.Store(e)
	return e
}

// records says whether a target's calls are recorded.
func (p *Pack) records(lim Limits) bool {
	switch {
	case p.record == nil || lim.Record == RecordNever:
		return false
	case p.record.Marked:
		return lim.Record == RecordYes
	}
	return true
}

// recordTape is the tape a recorded call fills.
func (p *Pack) recordTape() *sandbox.Tape {
	return &sandbox.Tape{Max: p.recordLimit()}
}

func (p *Pack) recordLimit() int { return recordLimit(p.record) }

// recordLimit is the bound of one call's record (RecordConfig.MaxCallBytes).
func recordLimit(c *RecordConfig) int {
	if c.MaxCallBytes > 0 {
		return min(c.MaxCallBytes, sandbox.MaxTapeBytes)
	}
	return DefaultRecordCallBytes
}

// keepRecord makes the record of a call that ran (or says in
// o.RecordSkipped why there is none): the guest's request and answer, the
// tape, its secrets redacted. The request message is added by Dispatch.
func (p *Pack) keepRecord(o *Outcome, t *Call, mod *module, call sandbox.Request, rep sandbox.Reply, err error, callCtx *ojson.Object) {
	switch {
	case errors.Is(err, sandbox.ErrMemoryBudget) || rep.MemoryRefused:
		o.RecordSkipped = RecordOverloaded
		return
	case errors.Is(err, sandbox.ErrDeadline) || errors.Is(err, sandbox.ErrCancelled):
		o.RecordSkipped = RecordInterrupted
		return
	case call.Record.Truncated || rep.SnapshotTape != nil && rep.SnapshotTape.Truncated ||
		call.Record.Size()+rep.SnapshotTape.Size()+len(call.Body)+len(rep.Body)+errLen(err) > p.recordLimit():
		o.RecordSkipped = RecordTooLarge
		return
	}
	limits := p.sb.GuestLimits()
	lim := call.CallLimits
	if lim.Fuel <= 0 {
		lim.Fuel = limits.DefaultFuel
	}
	lim.Fuel = min(lim.Fuel, sandbox.MaxFuel)
	r := &replay.Record{Format: replay.Format, RecordedAt: time.Now().UTC(), PackID: p.index.PackID,
		Target: string(t.Target), ID: t.ID, Version: t.Version,
		Module: replay.Module{Path: mod.path, SHA256: mod.sum},
		Limits: limits, CallLimits: lim, Instance: rep.Instance,
		Tape:   call.Record.Answers,
		Result: replay.Result{Status: int(rep.Status), Output: replay.Bytes(rep.Body), Fuel: rep.FuelUsed},
	}
	if err != nil {
		r.Result.Error = err.Error()
	}
	secrets := p.secretsOf(callCtx)
	if rep.SnapshotTape != nil {
		r.Snapshot = replay.NewSnapshot(rep.SnapshotID, mod.snapshotTape(rep.SnapshotTape, secrets.Env))
	}
	if r.Tape == nil {
		r.Tape = []sandbox.TapeAnswer{} // [] in the file, not null
	}
	r.Env = []string{}
	for _, kv := range call.Env {
		name, _, _ := strings.Cut(kv, "=")
		r.Env = append(r.Env, name)
	}
	r.Secrets = secrets.Record()
	// What the guest held is copied before it is redacted: the tape's
	// answers are the record's own, the request and output are not.
	r.Bound(p.recordLimit())
	r.GuestRequest = r.Redact("guestRequest", bytes.Clone(call.Body), secrets)
	r.Result.Output = r.Redact("output", bytes.Clone(rep.Body), secrets)
	r.Result.Error = string(r.Redact("error", []byte(r.Result.Error), secrets))
	for i := range r.Tape {
		r.Tape[i].Value = r.Redact(fmt.Sprintf("tape/%d", i), r.Tape[i].Value, secrets)
		if d := r.Tape[i].Detail; d != "" {
			r.Tape[i].Detail = string(r.Redact(fmt.Sprintf("tape/%d/detail", i), []byte(d), secrets))
		}
	}
	if r.Overflowed() {
		o.RecordSkipped = RecordTooLarge
		return
	}
	o.Record, o.secrets = r, secrets
}

// errLen is the length of err's text.
func errLen(err error) int {
	if err == nil {
		return 0
	}
	return len(err.Error())
}

// secretsOf are a call's secrets: its ctx.secrets (the strings among
// them), the values of the environment pack code sees, and of the
// variables the index binds as credentials.
func (p *Pack) secretsOf(callCtx *ojson.Object) *replay.Secrets {
	s := &replay.Secrets{}
	if callCtx != nil {
		if sec, ok := objectField(callCtx, "secrets"); ok {
			for i, k := range sec.Keys {
				if v, ok := sec.Vals[i].(string); ok && v != "" {
					s.Add("ctx.secrets."+k, v, slices.Contains(p.boundSecrets, k))
				}
			}
		}
	}
	for _, kv := range p.env {
		if name, v, _ := strings.Cut(kv, "="); v != "" {
			s.Add("env."+name, v, false)
		}
	}
	for _, name := range p.credentialVars {
		if v, ok := p.lookup(name); ok && v != "" {
			s.Add("env."+name, v, true)
		}
	}
	return s
}

// recordMessage is the request message of a recorded call, its
// ctx.secrets values replaced by their hashes and every other place a
// secret is redacted.
func recordMessage(r *replay.Record, msg *ojson.Object, secrets *replay.Secrets) {
	out := msg
	if ctx, ok := objectField(msg, "ctx"); ok {
		if s, ok := objectField(ctx, "secrets"); ok {
			hashed := &ojson.Object{}
			for i, k := range s.Keys {
				v := s.Vals[i]
				if str, ok := v.(string); ok {
					v = secrets.Hash("ctx.secrets."+k, str)
				}
				hashed.Set(k, v)
			}
			c := &ojson.Object{Keys: ctx.Keys, Vals: append([]any(nil), ctx.Vals...)}
			c.Set("secrets", hashed)
			out = &ojson.Object{Keys: msg.Keys, Vals: append([]any(nil), msg.Vals...)}
			out.Set("ctx", c)
		}
	}
	r.Request = r.Redact("request", ojson.Encode(out), secrets)
}
