package service

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// W3C trace context: the trace id a call arrived with, and its span id.

// traceIDFrom returns the trace id of a valid W3C traceparent, else "":
// version, trace id, span id and flags in lower-case hex (anything may
// follow), a trace id not all zeros, a version not ff. Read by hand: it
// runs on every call.
func traceIDFrom(h string) string {
	t := strings.TrimSpace(h)
	if len(t) < 55 || t[2] != '-' || t[35] != '-' || t[52] != '-' || strings.HasPrefix(h, "ff") ||
		!lowerHex(t[:2]) || !lowerHex(t[3:35]) || !lowerHex(t[36:52]) || !lowerHex(t[53:55]) ||
		t[3:35] == "00000000000000000000000000000000" {
		return ""
	}
	return t[3:35]
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// newSpanID is the span id a call's log lines carry when no span of its
// own names one.
func newSpanID() string { return newSpanIDBytes().String() }

// newTraceID and newSpanIDBytes are random, never zero, as the SDK's are
// (its generator is math/rand's too).
func newTraceID() (id trace.TraceID) {
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:8], rand.Uint64())
		binary.BigEndian.PutUint64(id[8:], rand.Uint64())
	}
	return id
}

func newSpanIDBytes() (id trace.SpanID) {
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}
