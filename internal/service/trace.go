package service

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
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

func newSpanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
