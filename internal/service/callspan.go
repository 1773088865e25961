package service

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// callSpan is the server span of a call, kept by packd rather than by the
// SDK's span: the SDK's took a few microseconds of a call to start, to take
// its attributes (normalised one by one, then de-duplicated through a map
// at the end) and to copy itself for the processor, a third of what
// tracing cost a call at c=32 on 2 cores. It records what the SDK's would
// (the sampler's decision over the same parameters, the span limits, the
// resource and scope), and goes to the same processor and exporter as the
// SDK's spans, egress spans among them, its children: to them it is the
// span in the call's context.
//
// A call's span is written by the call's goroutine only, until it ends;
// the processor reads it after. mu keeps any other writer in order.
type callSpan struct {
	embedded.Span
	// The SDK's interface, nil: a ReadOnlySpan must embed it (its method
	// private). Every method it names is callSpan's own.
	sdktrace.ReadOnlySpan

	t         *Tracing
	sc        trace.SpanContext
	parent    trace.SpanContext
	recording bool // the sampler records it; sc says whether it is exported

	mu       sync.Mutex
	name     string
	start    time.Time
	end      time.Time // zero until End
	attrs    []attribute.KeyValue
	dropped  int
	status   sdktrace.Status
	children int
}

// scope is the instrumentation scope of packd's spans (Tracing.tracer's).
var scope = instrumentation.Scope{Name: "github.com/kindgi/packd/internal/server"}

// startCall opens the server span of a call, a child of the caller's
// traceparent when it sent a valid one, and puts it in ctx.
func (t *Tracing) startCall(ctx context.Context, face, traceparent, tracestate string) (context.Context, *callSpan) {
	pctx := context.Background() // the parent alone, as the sampler reads it
	if traceparent != "" {
		pctx = propagation.TraceContext{}.Extract(pctx, callCarrier{traceparent, tracestate})
	}
	parent := trace.SpanContextFromContext(pctx)
	s := &callSpan{t: t, parent: parent, name: "invoke", start: time.Now()}
	tid := parent.TraceID()
	if !parent.IsValid() {
		tid = newTraceID()
	}
	faceAttr := attribute.String("packd.face", face)
	res := t.sampler.ShouldSample(sdktrace.SamplingParameters{
		ParentContext: pctx,
		TraceID:       tid, Name: s.name, Kind: trace.SpanKindServer, Attributes: []attribute.KeyValue{faceAttr},
	})
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: newSpanIDBytes(), TraceState: res.Tracestate}
	if res.Decision == sdktrace.RecordAndSample {
		cfg.TraceFlags = parent.TraceFlags() | trace.FlagsSampled
	} else {
		cfg.TraceFlags = parent.TraceFlags() &^ trace.FlagsSampled
	}
	s.sc = trace.NewSpanContext(cfg)
	if s.recording = res.Decision != sdktrace.Drop; s.recording {
		s.attrs = make([]attribute.KeyValue, 0, 16) // what describeCall and endCall set, but for egress
		s.SetAttributes(faceAttr)
		s.SetAttributes(res.Attributes...)
	}
	return trace.ContextWithSpan(ctx, s), s
}

// samplerFromEnv is the sampler OTEL_TRACES_SAMPLER and its argument name,
// read as the SDK reads them: the default is parentbased_always_on, and a
// ratio that is not one from 0 to 1 is 1 (the SDK's provider, which reads
// them too, says what is wrong with them). The provider is given the same
// sampler, so a call's span and its children sample alike.
func samplerFromEnv() sdktrace.Sampler {
	name := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() sdktrace.Sampler {
		if arg == "" {
			return sdktrace.TraceIDRatioBased(1)
		}
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || v < 0 || v > 1 {
			return sdktrace.TraceIDRatioBased(1)
		}
		return sdktrace.TraceIDRatioBased(v)
	}
	switch name {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return ratio()
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(ratio())
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// trace.Span.

func (s *callSpan) SpanContext() trace.SpanContext { return s.sc }

func (s *callSpan) IsRecording() bool {
	if !s.recording {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end.IsZero()
}

// SetAttributes adds attributes as the SDK's span does: each value cut to
// the limits' length (in characters, invalid UTF-8 dropped), a key given
// again replacing its value in place, and past the limits' count, none
// added but counted as dropped.
func (s *callSpan) SetAttributes(kv ...attribute.KeyValue) {
	if !s.recording || len(kv) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.end.IsZero() {
		return
	}
	limits := &s.t.limits
next:
	for _, a := range kv {
		if !a.Valid() {
			s.dropped++
			continue
		}
		if a.Value.Type() == attribute.STRING {
			if v := a.Value.AsString(); limits.AttributeValueLengthLimit >= 0 && len(v) > limits.AttributeValueLengthLimit {
				a.Value = attribute.StringValue(truncateChars(v, limits.AttributeValueLengthLimit))
			}
		}
		for i := range s.attrs {
			if s.attrs[i].Key == a.Key {
				s.attrs[i] = a
				continue next
			}
		}
		if limits.AttributeCountLimit >= 0 && len(s.attrs) >= limits.AttributeCountLimit {
			s.dropped++
			continue
		}
		s.attrs = append(s.attrs, a)
	}
}

// truncateChars is the first n characters of s, its invalid bytes dropped
// (the SDK's cut).
func truncateChars(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s) && n > 0; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size != 1 {
			b.WriteString(s[i : i+size])
			n--
		}
		i += size
	}
	return b.String()
}

// SetStatus sets the span's status as the SDK's does: a code only ever
// rises (Unset, Error, Ok), and only an error keeps a description.
func (s *callSpan) SetStatus(code codes.Code, description string) {
	if !s.recording {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.end.IsZero() || code < s.status.Code {
		return
	}
	s.status = sdktrace.Status{Code: code}
	if code == codes.Error {
		s.status.Description = description
	}
}

func (s *callSpan) SetName(name string) {
	if !s.recording {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end.IsZero() {
		s.name = name
	}
}

// End ends the span (once) and hands it to the processor.
func (s *callSpan) End(options ...trace.SpanEndOption) {
	if !s.recording {
		return
	}
	end := s.start.Add(time.Since(s.start)) // monotonic, as the SDK's
	if cfg := trace.NewSpanEndConfig(options...); !cfg.Timestamp().IsZero() {
		end = cfg.Timestamp()
	}
	s.mu.Lock()
	ended := !s.end.IsZero()
	if !ended {
		s.end = end
	}
	s.mu.Unlock()
	if !ended {
		s.t.processor.OnEnd(s)
	}
}

// addChild counts a span started as the call's child (an egress span).
func (s *callSpan) addChild() {
	s.mu.Lock()
	s.children++
	s.mu.Unlock()
}

// AddEvent, AddLink and RecordError: packd adds no events or links to a
// call's span, and records no errors on it but through its status.
func (*callSpan) AddEvent(string, ...trace.EventOption)   {}
func (*callSpan) AddLink(trace.Link)                      {}
func (*callSpan) RecordError(error, ...trace.EventOption) {}

func (s *callSpan) TracerProvider() trace.TracerProvider { return s.t.tp }

// sdktrace.ReadOnlySpan: read once the span has ended.

func (s *callSpan) Name() string                              { return s.name }
func (s *callSpan) Parent() trace.SpanContext                 { return s.parent }
func (*callSpan) SpanKind() trace.SpanKind                    { return trace.SpanKindServer }
func (s *callSpan) StartTime() time.Time                      { return s.start }
func (s *callSpan) EndTime() time.Time                        { return s.end }
func (s *callSpan) Attributes() []attribute.KeyValue          { return s.attrs }
func (*callSpan) Links() []sdktrace.Link                      { return nil }
func (*callSpan) Events() []sdktrace.Event                    { return nil }
func (s *callSpan) Status() sdktrace.Status                   { return s.status }
func (*callSpan) InstrumentationScope() instrumentation.Scope { return scope }

//nolint:staticcheck // the interface's, deprecated
func (*callSpan) InstrumentationLibrary() instrumentation.Library { return scope }
func (s *callSpan) Resource() *resource.Resource                  { return s.t.res }
func (s *callSpan) DroppedAttributes() int                        { return s.dropped }
func (*callSpan) DroppedLinks() int                               { return 0 }
func (*callSpan) DroppedEvents() int                              { return 0 }
func (s *callSpan) ChildSpanCount() int                           { return s.children }
