package service

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestOTLPSpansAreTheExportersOwn: packd's exporter sends a collector the
// very message otlptracehttp's own exporter sends for the same spans:
// every kind of attribute value, events and links with attributes,
// statuses, kinds, a remote parent with a trace state, a local one, two
// instrumentation scopes, and counts of what the span limits dropped.
func TestOTLPSpansAreTheExportersOwn(t *testing.T) {
	spans := sampleSpans(t)

	var mu sync.Mutex
	bodies := map[string][]byte{}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies[r.URL.Path] = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	ctx := context.Background()

	theirs, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(collector.URL+"/theirs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.URL+"/ours")
	ours, err := newOTLPExporter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []sdktrace.SpanExporter{theirs, ours} {
		if err := e.ExportSpans(ctx, spans); err != nil {
			t.Fatal(err)
		}
		if err := e.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var want, got coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(bodies["/theirs"], &want); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(bodies["/ours"], &got); err != nil {
		t.Fatal(err)
	}
	if n := len(want.ResourceSpans); n != 1 || len(want.ResourceSpans[0].ScopeSpans) != 2 || len(bodies["/ours"]) < 500 {
		t.Fatalf("the sample is not what the test means: %d resources, %d bytes", n, len(bodies["/ours"]))
	}
	if !proto.Equal(&want, &got) {
		t.Fatalf("packd's exporter sent\n%v\nwhere otlptracehttp's sent\n%v", &got, &want)
	}
	// Nothing to send: nothing sent.
	if otlpSpans(nil) != nil || otlpSpans([]sdktrace.ReadOnlySpan{nil}) != nil {
		t.Fatal("an empty batch is converted to something")
	}
}

// sampleSpans makes spans of every shape packd's exporter converts.
func sampleSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	limits := sdktrace.NewSpanLimits()
	limits.AttributeCountLimit, limits.EventCountLimit, limits.LinkCountLimit = 24, 2, 2
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "packd"), attribute.Int("n", 1))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(limits))
	server := tp.Tracer("packd/server", trace.WithInstrumentationVersion("1.2"), trace.WithInstrumentationAttributes(attribute.Bool("s", true)))
	egress := tp.Tracer("packd/egress", trace.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0"))

	every := []attribute.KeyValue{
		attribute.String("s", "x"), attribute.Int64("i", -7), attribute.Float64("f", 0.25), attribute.Bool("b", true),
		attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2}),
		attribute.Float64Slice("fs", []float64{1.5}), attribute.BoolSlice("bs", []bool{true, false}),
		attribute.ByteSlice("by", []byte{0, 1}), attribute.Slice("sl", attribute.StringValue("v"), attribute.IntValue(3)),
		attribute.Map("m", attribute.String("k", "v"), attribute.Int("n", 2)), {Key: "empty"},
		// Zero values a oneof still carries, and lengths of two and three bytes.
		attribute.String("zs", ""), attribute.Int("zi", 0), attribute.Float64("zf", 0), attribute.Bool("zb", false),
		attribute.String("long", strings.Repeat("x", 200)), attribute.StringSlice("longer", []string{strings.Repeat("y", 20000)}),
	}
	ts, err := trace.ParseTraceState("vendor=a,other=b")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	ctx, call := server.Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "invoke echo.echo",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(every...), trace.WithTimestamp(time.Unix(1, 2)))
	call.AddEvent("ev", trace.WithAttributes(attribute.String("e", "1"), attribute.Int("n", 4)))
	call.AddEvent("ev2")
	call.AddEvent("ev3") // past the limit: dropped
	call.AddLink(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.Float64("w", 1)}})
	call.SetStatus(codes.Error, "tool-threw")
	_, out := egress.Start(ctx, "GET", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.String("server.address", "example.com")))
	out.SetStatus(codes.Ok, "")
	out.End()
	_, inner := server.Start(ctx, "inner", trace.WithAttributes(make([]attribute.KeyValue, 30)...)) // invalid keys, dropped
	for i := range 30 {
		inner.SetAttributes(attribute.Int("a"+string(rune('a'+i)), i))
	}
	inner.RecordError(errors.New("boom"))
	inner.End()
	call.End(trace.WithTimestamp(time.Unix(3, 4)))
	for _, k := range []trace.SpanKind{trace.SpanKindInternal, trace.SpanKindProducer, trace.SpanKindConsumer} {
		_, s := egress.Start(context.Background(), k.String(), trace.WithSpanKind(k))
		s.End()
	}
	_ = tp.Shutdown(context.Background())
	return rec.Ended()
}

// TestOTLPSpansThatAreNotUTF8AreSent: a string that is not UTF-8 (a
// caller's header, a guest's error) in one span does not lose the batch
// it is in, as it does with otlptracehttp's conversion (proto.Marshal
// refuses it): the collector gets every span, U+FFFD in place of the bad
// bytes.
func TestOTLPSpansThatAreNotUTF8AreSent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := tp.Tracer("packd/server")
	_, bad := tr.Start(context.Background(), "invoke \xffecho", trace.WithAttributes(attribute.String("packd.tenant", "a\xfe"), attribute.StringSlice("l", []string{"\xc3"})))
	bad.SetStatus(codes.Error, "threw \xff")
	bad.End()
	_, good := tr.Start(context.Background(), "invoke echo")
	good.End()
	_ = tp.Shutdown(context.Background())
	spans := rec.Ended()

	var mu sync.Mutex
	var body []byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	ctx := context.Background()
	theirs, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(collector.URL))
	if err != nil {
		t.Fatal(err)
	}
	if err := theirs.ExportSpans(ctx, spans); err == nil {
		t.Fatal("otlptracehttp now sends strings that are not UTF-8: this test no longer shows a difference")
	}
	_ = theirs.Shutdown(ctx)

	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.URL)
	ours, err := newOTLPExporter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ours.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	_ = ours.Shutdown(ctx)
	var got coltracepb.ExportTraceServiceRequest
	mu.Lock()
	defer mu.Unlock()
	if err := proto.Unmarshal(body, &got); err != nil {
		t.Fatalf("the collector cannot read what packd sent: %v", err)
	}
	sent := got.ResourceSpans[0].ScopeSpans[0].Spans
	if len(sent) != 2 {
		t.Fatalf("%d spans arrived, want 2", len(sent))
	}
	s := sent[0]
	if s.Name != "invoke \uFFFDecho" || s.Status.Message != "threw \uFFFD" ||
		s.Attributes[0].Value.GetStringValue() != "a\uFFFD" || s.Attributes[1].Value.GetArrayValue().Values[0].GetStringValue() != "\uFFFD" {
		t.Fatalf("the span arrived as %v", s)
	}
}
