package service

import (
	"fmt"
	"time"

	"github.com/kindgi/packd/internal/host"
)

// Event is what happened to one call: a dispatched call, or a call
// refused before it ran (gate, tenant). It never holds the input, the
// output, secrets or env values.
type Event struct {
	Time time.Time
	// Face is the name of the face the call came through (Face.Name).
	Face string
	// Parsed is false for a call refused before its message was read
	// (a tenant header mismatch): such a call has no call record.
	Parsed bool
	// Call is the call's target and identity, as host parsed it.
	host.Call
	Outcome  string // "ok", an error code or a refusal code
	Status   int    // the status its face answered with (Face.Status)
	Duration time.Duration
	// Usage is what its pack code used (fuel, memory).
	host.Usage
	// Obligations are what its admission held it to (its tenant's
	// budget's rate limits and cap: host.Obligation).
	Obligations     []host.Obligation
	TraceID, SpanID string
	// ArtifactVersion is that of the pack the call ran on (a reload may
	// have served another since).
	ArtifactVersion string
}

// Hook is told of every call after its answer is written. A hook cannot
// fail a call; a panicking hook is recovered and counted. Hooks run one
// after another on the call's goroutine after its concurrency slot is
// released, so each must be quick (hand slow work to a goroutine of its own,
// as the audit log does).
type Hook interface {
	OnCall(Event)
}

// HookFunc adapts a function to a Hook.
type HookFunc func(Event)

// OnCall implements Hook.
func (f HookFunc) OnCall(e Event) { f(e) }

func (s *Service) runHooks(e Event) {
	for _, h := range s.cfg.Hooks {
		s.runHook(h, e)
	}
}

func (s *Service) runHook(h Hook, e Event) {
	defer func() {
		if p := recover(); p != nil {
			if s.cfg.Metrics != nil {
				s.cfg.Metrics.hookPanics.Inc()
			}
			s.cfg.Log.Line("error", fmt.Sprintf("A dispatch hook panicked: %v", p),
				Field{"event", "hook-panic"}, Field{"kind", "hook-panic"})
		}
	}()
	h.OnCall(e)
}

// CallLines is the hook that writes a `call` record for every parsed call.
func CallLines(r *Log) Hook {
	return HookFunc(func(e Event) {
		if !e.Parsed {
			return
		}
		level := "info"
		if e.Outcome != "ok" {
			level = "warn"
		}
		r.callLine(level, e)
	})
}

// idKey is the record field that names a call's tool or check.
func idKey(t host.Target) string {
	if t == host.TargetCheck {
		return "checkId"
	}
	return "toolId"
}
