package server

import (
	"bytes"
	"io"
	"testing"
	"time"
)

var callEvents = []Event{
	{Parsed: true, Target: "tool", ID: "echo.message", Version: "1.0.0", Outcome: "ok", Duration: 1200 * time.Microsecond, Fuel: 123456,
		TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331", TenantID: "t1", RunID: "r1", RequestID: "q1"},
	{Parsed: true, Target: "check", ID: "c.\"quoted\"\n", Outcome: "handler-throw", Duration: 3 * time.Second, Fuel: 1e15,
		TenantID: "t\u2028", ProjectID: "p", OrgID: "o"},
	{Parsed: true, Target: "tool", ID: "x", Outcome: "deadline-exceeded"},
}

// TestCallRecordsAreRecords: the call record written for every call is,
// byte for byte, the record Record writes from the same fields.
func TestCallRecordsAreRecords(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	for _, e := range callEvents {
		var fast, slow bytes.Buffer
		rf, rs := NewRecorder(&fast), NewRecorder(&slow)
		rf.now, rs.now = func() time.Time { return at }, func() time.Time { return at }
		CallRecords(rf).OnCall(e)
		msg, fields := callRecordFields(e)
		level := "warn"
		if e.Outcome == "ok" {
			level = "info"
		}
		rs.Record(level, msg, fields...)
		if fast.String() != slow.String() {
			t.Fatalf("call record\n%s\nwant\n%s", fast.String(), slow.String())
		}
	}
}

// BenchmarkCallRecord: what writing one call record costs (formatting; the
// writer discards).
func BenchmarkCallRecord(b *testing.B) {
	h := CallRecords(NewRecorder(io.Discard))
	b.ReportAllocs()
	for b.Loop() {
		h.OnCall(callEvents[0])
	}
}
