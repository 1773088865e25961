package server

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/kindgi/packd/host"
)

var callEvents = []Event{
	{Parsed: true, Call: host.Call{Target: host.TargetTool, ID: "echo.message", Version: "1.0.0",
		Correlation: host.Correlation{TenantID: "t1", RunID: "r1", RequestID: "q1"}},
		Outcome: "ok", Duration: 1200 * time.Microsecond, Usage: host.Usage{Fuel: 123456},
		TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"},
	{Parsed: true, Call: host.Call{Target: host.TargetCheck, ID: "c.\"quoted\"\n",
		Correlation: host.Correlation{TenantID: "t\u2028", ProjectID: "p", OrgID: "o"}},
		Outcome: "handler-throw", Duration: 3 * time.Second, Usage: host.Usage{Fuel: 1e15}},
	{Parsed: true, Call: host.Call{Target: host.TargetTool, ID: "x"}, Outcome: "deadline-exceeded"},
}

// TestCallRecordFieldOrder: a call record lists the trace, then the
// correlation fields in host.Correlation's order, then the tool or check.
func TestCallRecordFieldOrder(t *testing.T) {
	var b bytes.Buffer
	r := NewRecorder(&b)
	r.now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	CallRecords(r).OnCall(callEvents[0])
	want := `{"time":"2026-11-30T12:00:00.000Z","level":"info","severity":"INFO","subsystem":"pack","message":"tool echo.message ok 1ms",` +
		`"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","tenantId":"t1","runId":"r1","requestId":"q1","toolId":"echo.message",` +
		`"event":"call","kind":"call","target":"tool","id":"echo.message","version":"1.0.0","outcome":"ok","durationMs":1,"fuel":123456}` + "\n"
	if b.String() != want {
		t.Fatalf("call record\n%s\nwant\n%s", b.String(), want)
	}
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
