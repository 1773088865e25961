package service

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/lineq"
)

// Tracing exports OpenTelemetry spans over OTLP/HTTP, configured by the
// standard OTEL_* variables of the process environment (the exporter's
// endpoint, headers, timeout, protocol; the sampler; the batch
// processor's queue): a server span per call to /v1/invoke whose parent
// is the caller's traceparent, and a client span per outbound request of
// its pack code, whose traceparent the request carries.
//
// Exporting never blocks a call: a span that ends goes into the batch
// processor's bounded queue (OTEL_BSP_MAX_QUEUE_SIZE, 2048 by default),
// which one goroutine exports; while the collector is down or slow the
// queue fills and the spans past it are dropped.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	spans  *prometheus.CounterVec // exported spans by outcome; nil until metrics exist
	mu     sync.Mutex
	said   time.Time // when an export failure was last said in a record
	failed int       // export failures since
	// resumeAt is when exports resume after a failure (Unix nanoseconds),
	// backoff how long they last rested (countingExporter).
	resumeAt atomic.Int64
	backoff  time.Duration
	// queued counts the spans handed to the batch processor and not yet
	// exported or lost: its queue holds at most maxQueue, and a span that
	// would not fit is dropped here, counted, rather than by the
	// processor, which counts nothing anyone can read.
	queued   atomic.Int64
	maxQueue int64
	// What a call's span (callSpan) is made with: the provider's sampler,
	// span limits, resource, and its processor.
	sampler   sdktrace.Sampler
	limits    sdktrace.SpanLimits
	res       *resource.Resource
	processor sdktrace.SpanProcessor
}

// maxAttributeLength bounds a span attribute's value by default.
const maxAttributeLength = 256

// NewTracing starts the exporter (it sends nothing until spans end).
// rec is told of export failures, at most once a minute.
func NewTracing(ctx context.Context, version string, rec *Log) (*Tracing, error) {
	exp, err := newOTLPExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry's OTLP exporter: %w", err)
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// over packd's own name.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "packd"), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry's resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	t := &Tracing{maxQueue: int64(envInt("OTEL_BSP_MAX_QUEUE_SIZE", sdktrace.DefaultMaxQueueSize))}
	bsp := sdktrace.NewBatchSpanProcessor(countingExporter{exp, t}, sdktrace.WithMaxQueueSize(int(t.maxQueue)))
	// A caller names the tenant and the tool: no value it sends reaches
	// the collector longer than this, unless OTEL_*_VALUE_LENGTH_LIMIT
	// says otherwise.
	limits := sdktrace.NewSpanLimits()
	if limits.AttributeValueLengthLimit < 0 {
		limits.AttributeValueLengthLimit = maxAttributeLength
	}
	t.sampler, t.limits, t.processor = samplerFromEnv(), limits, newRestingProcessor(bsp, t)
	t.res, _ = resource.Merge(resource.Environment(), res) // the provider's, as WithResource makes it (and says what is wrong)
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(t.processor), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(limits),
		sdktrace.WithSampler(t.sampler))
	t.tracer = t.tp.Tracer(scope.Name)
	if rec != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { t.exportFailed(err, rec) }))
	}
	return t, nil
}

// exportFailed says an export failure in a record: the first, then at
// most one a minute with how many there were since.
func (t *Tracing) exportFailed(err error, rec *Log) {
	t.mu.Lock()
	t.failed++
	now := time.Now()
	if !t.said.IsZero() && now.Sub(t.said) < time.Minute {
		t.mu.Unlock()
		return
	}
	n := t.failed
	t.said, t.failed = now, 0
	t.mu.Unlock()
	rec.Lifecycle("trace-export-failed", "warn", "Spans could not be exported (calls go on; spans past the queue are dropped): "+err.Error(),
		Field{Key: "failures", Value: n})
}

// Close exports what is queued, waiting at most until ctx is done, and
// stops the exporter.
func (t *Tracing) Close(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// countingExporter counts the spans each export sent or lost, and after
// an export fails rests the exports for a while (a second, doubling to
// half a minute while they go on failing), during which restingProcessor
// drops each span as it ends. A collector that is down then costs no work
// of queueing, converting and sending spans that would be lost: that work
// took half again a pooled call's time on two cores.
type countingExporter struct {
	sdktrace.SpanExporter
	t *Tracing
}

// Export backoff after a failure (countingExporter).
const (
	exportBackoffMin = time.Second
	exportBackoffMax = 30 * time.Second
)

func (c countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	t := c.t
	err := c.SpanExporter.ExportSpans(ctx, spans)
	t.mu.Lock()
	if err != nil {
		t.backoff = min(max(2*t.backoff, exportBackoffMin), exportBackoffMax)
		t.resumeAt.Store(time.Now().Add(t.backoff).UnixNano())
	} else {
		t.backoff = 0
	}
	t.mu.Unlock()
	t.queued.Add(-int64(len(spans)))
	t.count(map[bool]string{true: spansOK, false: spansFailed}[err == nil], len(spans))
	return err
}

// The outcomes packd_trace_spans_total counts.
const (
	spansOK      = "ok"      // exported
	spansFailed  = "failed"  // the collector was down or refused them, or exports rested after it was
	spansDropped = "dropped" // the export queue was full: the collector is slower than the spans come
)

// count counts n spans by outcome.
func (t *Tracing) count(outcome string, n int) {
	if m := t.spans; m != nil {
		m.WithLabelValues(outcome).Add(float64(n))
	}
}

// envInt is a positive integer of the environment, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// restingProcessor is the batch processor, but for the spans that end
// while exports rest (countingExporter): those are dropped, and counted.
// The spans it takes reach the batch processor through a lineq.Worker:
// the processor's goroutine waits on its queue, and a span handed to it
// straight from a call woke it (a thread) for nearly every call, a third
// of what tracing cost a call at c=32 on 2 cores; the worker hands them
// over a few at a time, woken once for them. Its ForceFlush is the batch
// processor's, which a span that ended in the last millisecond may not
// have reached yet (nothing in packd forces a flush; Shutdown hands over
// every span first).
type restingProcessor struct {
	sdktrace.SpanProcessor
	t    *Tracing
	hand *lineq.Worker[sdktrace.ReadOnlySpan]
}

func newRestingProcessor(bsp sdktrace.SpanProcessor, t *Tracing) *restingProcessor {
	return &restingProcessor{SpanProcessor: bsp, t: t, hand: lineq.NewWorker(int(t.maxQueue), bsp.OnEnd, nil)}
}

// Shutdown hands over the spans that wait, then shuts the batch processor
// down (it exports them), both within ctx.
func (p *restingProcessor) Shutdown(ctx context.Context) error {
	if err := p.hand.Close(ctx); err != nil {
		return err
	}
	return p.SpanProcessor.Shutdown(ctx)
}

func (p *restingProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	switch {
	case !s.SpanContext().IsSampled():
		return // the batch processor takes sampled spans only
	case time.Now().UnixNano() < p.t.resumeAt.Load():
		p.t.count(spansFailed, 1)
		return
	case p.t.queued.Add(1) > p.t.maxQueue:
		p.t.queued.Add(-1)
		p.t.count(spansDropped, 1)
		return
	}
	if queued, _ := p.hand.Put(s); !queued { // shut down
		p.t.queued.Add(-1)
		p.t.count(spansDropped, 1)
	}
}

// register adds packd_trace_spans_total to the service's registry.
func (t *Tracing) register(reg prometheus.Registerer) error {
	spans := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "packd_trace_spans_total", Help: "Spans handed to the OTLP exporter, by outcome: ok (exported), failed (lost: the collector was down or refused them) or dropped (lost: the export queue was full).",
	}, []string{"outcome"})
	if err := reg.Register(spans); err != nil {
		return err
	}
	t.spans = spans
	return nil
}

// callCarrier is a call's W3C trace context headers, as the propagator
// reads them.
type callCarrier struct{ traceparent, tracestate string }

func (c callCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.traceparent
	case "tracestate":
		return c.tracestate
	}
	return ""
}

func (callCarrier) Set(string, string) {}
func (callCarrier) Keys() []string     { return []string{"traceparent", "tracestate"} }

// describeCall names the span of a call that was dispatched and returns
// what the call did, as attributes for endCall.
func describeCall(span *callSpan, e Event, known bool, attrs []attribute.KeyValue) []attribute.KeyValue {
	target := string(e.Target)
	if target == "" {
		target = string(host.TargetTool)
	}
	name := "invoke"
	if e.Target == host.TargetCheck {
		name = "check-invoke"
	}
	if known { // ids the index names only: span names stay bounded
		name += " " + e.ID
	}
	span.SetName(name)
	idKey, versionKey := attribute.Key("packd.tool.id"), attribute.Key("packd.tool.version")
	if e.Target == host.TargetCheck {
		idKey, versionKey = "packd.check.id", "packd.check.version"
	}
	attrs = append(attrs,
		attribute.String("packd.target", target),
		idKey.String(e.ID),
		attribute.String("packd.outcome", e.Outcome),
		attribute.String("packd.artifact_version", e.ArtifactVersion),
		attribute.Int64("packd.fuel", e.Fuel),
		attribute.Int64("packd.memory.peak_bytes", e.MemoryBytes),
	)
	if eg := e.Egress; eg.Requests > 0 || eg.Refused > 0 { // a module that sends no requests has none
		attrs = append(attrs, attribute.Int("packd.egress.requests", eg.Requests), attribute.Int("packd.egress.refused", eg.Refused),
			attribute.Int64("packd.egress.bytes_sent", eg.BytesSent), attribute.Int64("packd.egress.bytes_received", eg.BytesReceived))
	}
	if e.Version != "" {
		attrs = append(attrs, versionKey.String(e.Version))
	}
	if e.TenantID != "" {
		attrs = append(attrs, attribute.String("packd.tenant.id", e.TenantID))
	}
	if e.Instance != "" {
		attrs = append(attrs, attribute.String("packd.instance", e.Instance), attribute.Float64("packd.pool.reset_seconds", e.ResetSeconds))
	}
	if e.Outcome != "ok" {
		attrs = append(attrs, attribute.String("packd.error.code", e.Outcome))
		span.SetStatus(codes.Error, e.Outcome)
	}
	return attrs
}

// spanAttrs is room for what describeCall and endCall set on a call's
// span: the span copies them, so the room is used again by the next call
// (a kilobyte a traced call).
type spanAttrs struct{ kv []attribute.KeyValue }

var spanAttrsPool = sync.Pool{New: func() any { return &spanAttrs{kv: make([]attribute.KeyValue, 0, 16)} }}

func (a *spanAttrs) free() {
	clear(a.kv) // nothing of the call kept
	a.kv = a.kv[:0]
	spanAttrsPool.Put(a)
}

// endCall closes a call's span with attrs (describeCall's, or none) and
// the status it was answered with, set at once: the span's attributes
// grow once.
func endCall(span *callSpan, status int, attrs *spanAttrs) {
	if span.IsRecording() { // a span the sampler dropped takes nothing
		var kv []attribute.KeyValue
		if attrs != nil {
			attrs.kv = append(attrs.kv, attribute.Int("http.response.status_code", status))
			kv = attrs.kv
		} else {
			kv = []attribute.KeyValue{attribute.Int("http.response.status_code", status)}
		}
		span.SetAttributes(kv...)
		if status >= 400 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	}
	span.End()
}

// refusedSpan marks the span of a call refused before its pack code ran.
func refusedSpan(span *callSpan, reason string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("packd.outcome", reason), attribute.String("packd.error.code", reason))
	span.SetStatus(codes.Error, reason)
}

// Start implements host.EgressTracer: the client span of one outbound
// request, a child of the call's, whose traceparent the request carries
// (over any its pack code set; never the caller's tracestate or baggage,
// which are not the host's to pass on).
func (t *Tracing) Start(parent context.Context, method, hostName string, h http.Header) func(host.EgressEvent) {
	if cs, ok := trace.SpanFromContext(parent).(*callSpan); ok {
		cs.addChild()
	}
	_, span := t.tracer.Start(parent, method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", method), attribute.String("server.address", hostName)))
	sc := span.SpanContext()
	h.Set("Traceparent", fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags()))
	h.Del("Tracestate")
	return func(ev host.EgressEvent) {
		if ev.Reason != "" {
			span.SetAttributes(attribute.String("packd.egress.refused", ev.Reason))
			span.SetStatus(codes.Error, ev.Reason)
		} else {
			span.SetAttributes(attribute.Int("http.response.status_code", ev.Status))
			if ev.Status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(ev.Status))
			}
		}
		span.SetAttributes(attribute.Int64("packd.egress.bytes_sent", ev.BytesSent), attribute.Int64("packd.egress.bytes_received", ev.BytesReceived))
		if ev.Credential != "" {
			span.SetAttributes(attribute.String("packd.egress.credential", ev.Credential)) // its source, never its value
		}
		span.End()
	}
}
