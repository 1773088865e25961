package main

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver: it decodes every export's
// protobuf and keeps its spans, with their resource's attributes.
type collector struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []*tracepb.Span
	resource map[string]string
	bad      []string // what was wrong with an export
}

func newCollector(t *testing.T) *collector {
	c := &collector{resource: map[string]string{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		c.mu.Lock()
		defer c.mu.Unlock()
		if r.Method != "POST" || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			c.bad = append(c.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		}
		if err := proto.Unmarshal(b, &req); err != nil {
			c.bad = append(c.bad, err.Error())
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				c.resource[kv.Key] = kv.GetValue().GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.Close)
	return c
}

// waitSpans waits for n spans at least, and answers them.
func (c *collector) waitSpans(t *testing.T, n int) []*tracepb.Span {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c.mu.Lock()
		spans, bad := append([]*tracepb.Span(nil), c.spans...), c.bad
		c.mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("bad exports: %v", bad)
		}
		if len(spans) >= n {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spans, want %d", len(spans), n)
		}
	}
}

// attrs are a span's attributes as strings.
func attrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = anyValue(kv.Value)
	}
	return m
}

func anyValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		if x.DoubleValue > 0 {
			return "positive"
		}
		return "0"
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	return "?"
}

// TestTracesReachARealCollector: with OTEL_EXPORTER_OTLP_ENDPOINT set,
// every call to /v1/invoke, tool or check, is a server span in the
// collector, the child of the caller's traceparent, with what the call
// did as attributes; an outbound request of its pack code is a client
// span, the child of the call's, whose traceparent the allowlisted host
// received; the call records name the call's span.
func TestTracesReachARealCollector(t *testing.T) {
	col := newCollector(t)
	var seen []string
	var seenMu sync.Mutex
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenMu.Lock()
		seen = append(seen, r.Header.Get("Traceparent")+" "+r.Header.Get("Tracestate"))
		seenMu.Unlock()
		io.WriteString(w, "pong")
	}))
	t.Cleanup(upstream.Close)
	dir := t.TempDir()
	for _, m := range []string{filepath.Join("..", "..", "testdata", "cnet", "cnet.wasm"), conformanceWasm} {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(m)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx := filepath.Join(dir, "index.json")
	index := `{"v":1,"packId":"traced","packVersion":"1.0.0","artifactVersion":"traced-1","publishedAt":"2026-12-02T00:00:00.000Z","agents":[],"flows":[],` +
		`"tools":[{"id":"net.fetch","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"cnet.wasm","network":{"kind":"allowlist","hosts":["127.0.0.1"]}}],` +
		`"guardrails":[{"action":{"on-violation":"halt"},"checkId":"conformance.checks.min-length","checkModulePath":"conformance.wasm","id":"conformance.min-length","kind":"zero-llm"}]}`
	if err := os.WriteFile(idx, []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	s := start(t, idx, map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8", "OTEL_EXPORTER_OTLP_ENDPOINT": col.URL,
		"OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_SERVICE_NAME": "packd-under-test"})
	if rec := record(t, s.stderr.waitFor(t, 5*time.Second, kindIs("listening"))); rec["traces"] != "otlp" {
		t.Fatalf("the listening record does not say traces are on: %v", rec)
	}
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	expect(t, s.invoke(t, invokeBody("net.fetch", "", `{"url":"`+upstream.URL+`/ping"}`, `{"tenantId":"t-traced","runId":"r"}`),
		"traceparent", "00-"+trace+"-"+parent+"-01", "tracestate", "caller=secret"),
		200, `{"v":2,"kind":"result","output":{"status":200,"body":"pong"}}`)
	expect(t, s.invoke(t, `{"v":2,"kind":"check-invoke","check":{"id":"conformance.checks.min-length"},"config":{},"trace":{"output":"ok"}}`),
		200, `{"v":2,"kind":"check-result","result":{"passed":true}}`)

	long := strings.Repeat("t", 5000)
	s.invoke(t, invokeBody("nope.unknown", "", `{}`, `{"tenantId":"`+long+`","runId":"r"}`))

	spans := col.waitSpans(t, 4)
	byName := map[string]*tracepb.Span{}
	for _, sp := range spans {
		byName[sp.Name] = sp
	}
	call, out, check := byName["invoke net.fetch"], byName["GET"], byName["check-invoke conformance.checks.min-length"]
	if call == nil || out == nil || check == nil {
		var names []string
		for _, sp := range spans {
			names = append(names, sp.Name)
		}
		t.Fatalf("spans %v, want invoke net.fetch, GET and check-invoke conformance.checks.min-length", names)
	}
	if hex.EncodeToString(call.TraceId) != trace || hex.EncodeToString(call.ParentSpanId) != parent || call.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("the call's span: trace %x parent %x kind %v, want the caller's trace and span as parent, server", call.TraceId, call.ParentSpanId, call.Kind)
	}
	a := attrs(call)
	for k, want := range map[string]string{"packd.face": "http", "packd.target": "tool", "packd.tool.id": "net.fetch", "packd.tool.version": "1.0.0", "packd.tenant.id": "t-traced",
		"packd.outcome": "ok", "packd.artifact_version": "traced-1", "packd.egress.requests": "1", "packd.egress.refused": "0",
		"packd.egress.bytes_received": "4", "http.response.status_code": "200", "packd.pool.reset_seconds": "positive"} {
		if a[k] != want {
			t.Errorf("the call's span: %s = %q, want %q (all: %v)", k, a[k], want, a)
		}
	}
	if a["packd.fuel"] == "0" || a["packd.fuel"] == "" || a["packd.memory.peak_bytes"] == "0" || (a["packd.instance"] != "hit" && a["packd.instance"] != "miss") {
		t.Errorf("the call's span lacks its fuel, memory or instance: %v", a)
	}
	if !equalBytes(out.TraceId, call.TraceId) || !equalBytes(out.ParentSpanId, call.SpanId) || out.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("the egress span: trace %x parent %x kind %v, want the call's span as parent, client", out.TraceId, out.ParentSpanId, out.Kind)
	}
	if oa := attrs(out); oa["server.address"] != "127.0.0.1" || oa["http.response.status_code"] != "200" || oa["http.request.method"] != "GET" {
		t.Errorf("the egress span's attributes: %v", oa)
	}
	seenMu.Lock()
	got := strings.Join(seen, "\n")
	seenMu.Unlock()
	if want := "00-" + trace + "-" + hex.EncodeToString(out.SpanId) + "-01 "; got != want {
		t.Errorf("the allowlisted host received traceparent and tracestate %q, want %q (the caller's tracestate is not passed on)", got, want)
	}
	if ca := attrs(check); ca["packd.target"] != "check" || ca["packd.check.id"] != "conformance.checks.min-length" || ca["packd.outcome"] != "ok" || len(check.ParentSpanId) != 0 {
		t.Errorf("the check's span (a root: its caller sent no traceparent): parent %x, %v", check.ParentSpanId, ca)
	}
	// A caller's values are bounded, and so are span names.
	if unknown := byName["invoke"]; unknown == nil || attrs(unknown)["packd.tenant.id"] != long[:256] || attrs(unknown)["packd.outcome"] != "tool-not-in-pack" {
		t.Errorf("the span of a call to a tool the index lacks: %v", unknown)
	}
	if col.resource["service.name"] != "packd-under-test" {
		t.Errorf("resource %v: OTEL_SERVICE_NAME is not the service's name", col.resource)
	}
	// The call records name the spans.
	line := s.stderr.waitFor(t, 10*time.Second, func(l string) bool { return kindIs("call")(l) && strings.Contains(l, "net.fetch") })
	if r := record(t, line); r["traceId"] != trace || r["spanId"] != hex.EncodeToString(call.SpanId) {
		t.Errorf("the call record %s does not name span %x", line, call.SpanId)
	}
}

func equalBytes(a, b []byte) bool { return hex.EncodeToString(a) == hex.EncodeToString(b) }

// TestTracesAreOnOnlyWhenAsked: the standard OTEL_* variables decide:
// off by default; on with an OTLP endpoint or OTEL_TRACES_EXPORTER=otlp;
// off with "none" or OTEL_SDK_DISABLED; an exporter or a protocol packd
// does not speak is a configuration problem, not a silent fallback.
func TestTracesAreOnOnlyWhenAsked(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		problem string
	}{
		{nil, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, `OTEL_TRACES_EXPORTER must be "otlp" or "none"`},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, `OTEL_EXPORTER_OTLP_PROTOCOL must be "http/protobuf" or "http/json"`},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:"}, true, `OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL with a host (and a port from 1 to 65535, when it names one): "http://127.0.0.1:" names no port`},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:99999"}, true, "names no port"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318"}, true, "has no http or https scheme"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http:///v1"}, true, "names no host"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example.com"}, true, ""},
	} {
		on, problems := tracesFrom(func(k string) string { return c.env[k] })
		if on != c.on || (c.problem == "") != (len(problems) == 0) || c.problem != "" && !strings.Contains(strings.Join(problems, "; "), c.problem) {
			t.Errorf("%v: on %v, problems %q", c.env, on, problems)
		}
	}
}

// TestTracesHonourTheSampler: OTEL_TRACES_SAMPLER decides which calls
// have a span, as OpenTelemetry names it: parentbased_traceidratio with
// a ratio of 0 keeps exactly the calls whose caller's traceparent is
// sampled (flag 01), each sampled span with the call's fuel and outcome;
// every call is answered either way.
func TestTracesHonourTheSampler(t *testing.T) {
	col := newCollector(t)
	dir := t.TempDir()
	b, err := os.ReadFile(conformanceWasm)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conformance.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "index.json")
	index := `{"v":1,"packId":"sampled","packVersion":"1.0.0","artifactVersion":"sampled-1","publishedAt":"2026-12-05T00:00:00.000Z","agents":[],"flows":[],` +
		`"tools":[{"id":"conformance.echo","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"conformance.wasm"}],"guardrails":[]}`
	if err := os.WriteFile(idx, []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	s := start(t, idx, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.URL, "OTEL_BSP_SCHEDULE_DELAY": "50",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"})
	sampled := map[string]bool{}
	for i := range 20 {
		trace := fmt.Sprintf("%032x", i+1)
		flag := "00"
		if i%4 == 0 {
			flag, sampled[trace] = "01", true
		}
		r := s.invoke(t, invokeBody("conformance.echo", "", `{"message":"m"}`, `{"tenantId":"t","runId":"r"}`), "traceparent", "00-"+trace+"-00f067aa0ba902b7-"+flag)
		if r.status != 200 || !strings.Contains(r.body, `"kind":"result"`) {
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
	}
	// The last three calls are unsampled: had any unsampled call been
	// exported, it would be here by the time the sampled ones are, or
	// after a further wait.
	spans := col.waitSpans(t, len(sampled))
	time.Sleep(300 * time.Millisecond)
	col.mu.Lock()
	spans = append(spans[:0], col.spans...)
	col.mu.Unlock()
	if len(spans) != len(sampled) {
		t.Fatalf("%d spans of %d sampled calls", len(spans), len(sampled))
	}
	for _, sp := range spans {
		a := attrs(sp)
		if !sampled[hex.EncodeToString(sp.TraceId)] || a["packd.outcome"] != "ok" || a["packd.fuel"] == "" || a["packd.fuel"] == "0" {
			t.Errorf("span %s of trace %x: %v", sp.Name, sp.TraceId, a)
		}
	}
}
