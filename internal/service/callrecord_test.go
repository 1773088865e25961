package service

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/ojson"
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
	{Parsed: true, Call: host.Call{Target: host.TargetTool, ID: "net.fetch", Correlation: host.Correlation{TenantID: "t2"}},
		Outcome: "ok", Duration: 40 * time.Millisecond, Usage: host.Usage{Fuel: 1<<53 + 1,
			Egress: host.EgressSummary{Requests: 3, Refused: 1, BytesSent: 120, BytesReceived: 4096}}},
}

// TestCallRecordFieldOrder: a call record lists the trace, then the
// correlation fields in host.Correlation's order, then the tool or check.
func TestCallRecordFieldOrder(t *testing.T) {
	var b bytes.Buffer
	r := NewLog(&b)
	r.now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	CallLines(r).OnCall(callEvents[0])
	want := `{"time":"2026-11-30T12:00:00.000Z","level":"info","severity":"INFO","subsystem":"pack","message":"tool echo.message ok 1ms",` +
		`"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","tenantId":"t1","runId":"r1","requestId":"q1","toolId":"echo.message",` +
		`"event":"call","kind":"call","target":"tool","id":"echo.message","version":"1.0.0","outcome":"ok","durationMs":1,"fuel":123456}` + "\n"
	if b.String() != want {
		t.Fatalf("call record\n%s\nwant\n%s", b.String(), want)
	}
	// fuel is an integer, exactly, past what a float holds (2^53 + 1)
	b.Reset()
	CallLines(r).OnCall(callEvents[3])
	if !bytes.Contains(b.Bytes(), []byte(`"fuel":9007199254740993,"egress":{"requests":3,"refused":1,"bytesSent":120,"bytesReceived":4096}}`)) {
		t.Fatalf("call record %s", b.String())
	}
}

// TestCallRecordsAreRecords: the call record written for every call is,
// byte for byte, the record Record writes from the same fields.
func TestCallRecordsAreRecords(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	for _, e := range callEvents {
		var fast, slow bytes.Buffer
		rf, rs := NewLog(&fast), NewLog(&slow)
		rf.now, rs.now = func() time.Time { return at }, func() time.Time { return at }
		CallLines(rf).OnCall(e)
		msg, fields := callRecordFields(e)
		level := "warn"
		if e.Outcome == "ok" {
			level = "info"
		}
		rs.Line(level, msg, fields...)
		if fast.String() != slow.String() {
			t.Fatalf("call record\n%s\nwant\n%s", fast.String(), slow.String())
		}
	}
}

// BenchmarkCallRecord: what writing one call record costs (formatting; the
// writer discards).
func BenchmarkCallRecord(b *testing.B) {
	h := CallLines(NewLog(io.Discard))
	b.ReportAllocs()
	for b.Loop() {
		h.OnCall(callEvents[0])
	}
}

// callRecordFields are a call record's fields, for Recorder.Record: the
// reference that callRecord, the one writer, is held to (it writes the
// same bytes without building them).
func callRecordFields(e Event) (string, []Field) {
	ms := e.Duration.Milliseconds()
	fields := []Field{{"traceId", e.TraceID}, {"spanId", e.SpanID}}
	for _, f := range e.Correlation.Pairs() {
		fields = append(fields, Field{f.Key, f.Value})
	}
	fields = append(fields, Field{idKey(e.Target), e.ID},
		Field{"event", "call"}, Field{"kind", "call"}, Field{"target", string(e.Target)}, Field{"id", e.ID})
	if e.Version != "" {
		fields = append(fields, Field{"version", e.Version})
	}
	fields = append(fields, Field{"outcome", e.Outcome}, Field{"durationMs", int(ms)}, Field{"fuel", int(e.Fuel)})
	if g := e.Egress; g.Requests > 0 || g.Refused > 0 {
		fields = append(fields, Field{"egress", &ojson.Object{Keys: []string{"requests", "refused", "bytesSent", "bytesReceived"},
			Vals: []any{g.Requests, g.Refused, int(g.BytesSent), int(g.BytesReceived)}}})
	}
	return callMessage(e, ms), fields
}

// callMessage is a call record's message, as the reference writes it.
func callMessage(e Event, ms int64) string {
	return string(e.Target) + " " + e.ID + " " + e.Outcome + " " + strconv.FormatInt(ms, 10) + "ms"
}

// TestLogTimesAreWhatTimeFormatWrites: a call line's time is what
// time.Format writes with the layout the other lines use, in UTC,
// whatever the time and its zone.
func TestLogTimesAreWhatTimeFormatWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	zone := time.FixedZone("x", -(9*3600 + 30*60))
	times := []time.Time{time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 7, 0, 0, 0, 1e6-1, zone)}
	for range 10000 {
		times = append(times, time.Unix(r.Int64N(400e9)-100e9, r.Int64N(1e9)).In(zone))
	}
	for _, tm := range times {
		if got, want := string(appendLogTime(nil, tm)), tm.UTC().Format("2006-01-02T15:04:05.000Z"); got != want {
			t.Fatalf("%v: %s, want %s", tm, got, want)
		}
	}
}
