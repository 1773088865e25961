package service

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestACallSpanRecordsWhatTheSDKsWould: a call's span (callSpan) and the
// SDK's span, given the same parent, limits and calls, end with the same
// name, kind, parent, trace, sampling, attributes (values cut to the
// length limit in characters, invalid UTF-8 dropped, a key set again
// replacing its value where it was, past the count limit dropped and
// counted) and status (a code only rises; an error keeps its
// description), and reach the processor alike.
func TestACallSpanRecordsWhatTheSDKsWould(t *testing.T) {
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct {
		name      string
		count     int
		length    int
		sampler   sdktrace.Sampler
		parent    string
		sampledIn bool
	}{
		{"defaults", 128, 256, sdktrace.ParentBased(sdktrace.AlwaysSample()), traceparent, true},
		{"few attributes", 4, 256, sdktrace.ParentBased(sdktrace.AlwaysSample()), traceparent, true},
		{"short values", 128, 3, sdktrace.AlwaysSample(), "", true},
		{"no cut", 128, -1, sdktrace.AlwaysSample(), "", true},
		{"parent not sampled", 128, 256, sdktrace.ParentBased(sdktrace.AlwaysSample()), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", false},
		{"never", 128, 256, sdktrace.NeverSample(), traceparent, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			limits := sdktrace.NewSpanLimits()
			limits.AttributeCountLimit, limits.AttributeValueLengthLimit = c.count, c.length
			theirs, ours := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
			res := resource.NewSchemaless(attribute.String("service.name", "test"))
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(theirs), sdktrace.WithRawSpanLimits(limits),
				sdktrace.WithSampler(c.sampler), sdktrace.WithResource(res))
			tr := &Tracing{tp: tp, sampler: c.sampler, limits: limits, res: res, processor: ours}
			parent := propagation.TraceContext{}.Extract(context.Background(), callCarrier{c.parent, ""})
			_, sdkSpan := tp.Tracer(scope.Name).Start(parent, "invoke", trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("packd.face", "http")))
			_, span := tr.startCall(context.Background(), "http", c.parent, "")
			for _, s := range []trace.Span{sdkSpan, span} {
				s.SetName("invoke echo.echo")
				s.SetAttributes(
					attribute.String("packd.tenant.id", strings.Repeat("é", 300)),
					attribute.String("bad", "a\xffb\xfec\xffd\xffe"),
					attribute.String("fffd", "\uFFFD\uFFFDxyz"),
					attribute.Int64("packd.fuel", 7),
					attribute.String("packd.outcome", "ok"),
				)
				s.SetAttributes(attribute.String("packd.outcome", "tool-failed"), attribute.Bool("late", true), attribute.KeyValue{})
				s.SetStatus(codes.Error, "tool-failed")
				s.SetStatus(codes.Unset, "ignored")
				if s.IsRecording() != c.sampledIn { // these samplers record what they sample
					t.Fatalf("%T recording %v, want %v", s, s.IsRecording(), c.sampledIn)
				}
				s.End()
				s.SetAttributes(attribute.String("after", "end"))
			}
			if span.SpanContext().IsSampled() != c.sampledIn || sdkSpan.SpanContext().IsSampled() != c.sampledIn {
				t.Fatalf("sampled: ours %v, the SDK's %v, want %v", span.SpanContext().IsSampled(), sdkSpan.SpanContext().IsSampled(), c.sampledIn)
			}
			if c.parent != "" && span.SpanContext().TraceID() != sdkSpan.SpanContext().TraceID() {
				t.Fatalf("trace %v, the SDK's %v", span.SpanContext().TraceID(), sdkSpan.SpanContext().TraceID())
			}
			a, b := theirs.Ended(), ours.Ended()
			if len(a) != len(b) {
				t.Fatalf("the processor was given %d of ours, %d of the SDK's", len(b), len(a))
			}
			if len(a) == 0 {
				return
			}
			want, got := a[0], b[0]
			if got.Name() != want.Name() || got.SpanKind() != want.SpanKind() || !got.Parent().Equal(want.Parent()) ||
				got.Status() != want.Status() || got.DroppedAttributes() != want.DroppedAttributes() ||
				got.Resource().Equivalent() != want.Resource().Equivalent() || got.InstrumentationScope() != want.InstrumentationScope() ||
				!slices.Equal(got.Attributes(), want.Attributes()) || got.EndTime().Before(got.StartTime()) {
				t.Fatalf("ours: %s %v parent %v %v dropped %d %v\nthe SDK's: %s %v parent %v %v dropped %d %v",
					got.Name(), got.SpanKind(), got.Parent(), got.Status(), got.DroppedAttributes(), got.Attributes(),
					want.Name(), want.SpanKind(), want.Parent(), want.Status(), want.DroppedAttributes(), want.Attributes())
			}
		})
	}
}

// TestTheSamplerIsTheOneTheVariablesName: OTEL_TRACES_SAMPLER and its
// argument, read as the SDK reads them.
func TestTheSamplerIsTheOneTheVariablesName(t *testing.T) {
	for _, c := range []struct{ name, arg, want string }{
		{"", "", sdktrace.ParentBased(sdktrace.AlwaysSample()).Description()},
		{"always_on", "", sdktrace.AlwaysSample().Description()},
		{" Always_Off ", "", sdktrace.NeverSample().Description()},
		{"traceidratio", "0.25", sdktrace.TraceIDRatioBased(0.25).Description()},
		{"traceidratio", "", sdktrace.TraceIDRatioBased(1).Description()},
		{"traceidratio", "2", sdktrace.TraceIDRatioBased(1).Description()},
		{"traceidratio", "half", sdktrace.TraceIDRatioBased(1).Description()},
		{"parentbased_always_on", "", sdktrace.ParentBased(sdktrace.AlwaysSample()).Description()},
		{"parentbased_always_off", "", sdktrace.ParentBased(sdktrace.NeverSample()).Description()},
		{"parentbased_traceidratio", "0.1", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)).Description()},
		{"jaeger_remote", "", sdktrace.ParentBased(sdktrace.AlwaysSample()).Description()},
	} {
		t.Setenv("OTEL_TRACES_SAMPLER", c.name)
		t.Setenv("OTEL_TRACES_SAMPLER_ARG", c.arg)
		if got := samplerFromEnv().Description(); got != c.want {
			t.Errorf("%q %q: %s, want %s", c.name, c.arg, got, c.want)
		}
	}
}
