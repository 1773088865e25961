package service

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
)

// W3C trace context: the trace id a call arrived with, and its span id.

var traceparent = regexp.MustCompile(`^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}`)

// traceIDFrom returns the trace id of a valid W3C traceparent, else "".
func traceIDFrom(h string) string {
	m := traceparent.FindStringSubmatch(strings.TrimSpace(h))
	if m == nil || m[1] == strings.Repeat("0", 32) || strings.HasPrefix(h, "ff") {
		return ""
	}
	return m[1]
}

func newSpanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
