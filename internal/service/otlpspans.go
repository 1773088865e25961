package service

import (
	"context"
	"fmt"
	"math"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// otlpExporter is otlptracehttp's exporter (its client: the endpoint,
// headers, TLS, compression, timeout and retries the OTEL_* variables
// configure) with its own conversion of a batch to OTLP's messages. The
// exporter's conversion allocates three objects an attribute and three a
// span (a third of a traced call's allocations, with its marshalling most
// of what tracing cost besides the span itself); this one allocates a
// few slices a batch. What it makes is the same message
// (TestOTLPSpansAreTheExportersOwn).
type otlpExporter struct {
	client   otlptrace.Client
	stopOnce sync.Once
}

func newOTLPExporter(ctx context.Context) (*otlpExporter, error) {
	c := otlptracehttp.NewClient()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	return &otlpExporter{client: c}, nil
}

func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	rs := otlpSpans(spans)
	if len(rs) == 0 {
		return nil
	}
	if err := e.client.UploadTraces(ctx, rs); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

func (e *otlpExporter) Shutdown(ctx context.Context) error {
	var err error
	e.stopOnce.Do(func() { err = e.client.Stop(ctx) })
	return err
}

// otlpSpans converts a batch to OTLP's messages, grouped by resource and
// instrumentation scope, as otlptrace's exporter does.
func otlpSpans(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	var b otlpBatch
	for _, s := range spans {
		if s != nil {
			b.count(s)
		}
	}
	if b.spans == 0 {
		return nil
	}
	b.alloc()
	var out []*tracepb.ResourceSpans
	type scopeGroup struct {
		res   *resource.Resource
		scope instrumentation.Scope
		ss    *tracepb.ScopeSpans
	}
	var scopes []scopeGroup
	var resources []*resource.Resource // beside out
	same := func(a, b *resource.Resource) bool { return a == b || a.Equivalent() == b.Equivalent() }
	for _, s := range spans {
		if s == nil {
			continue
		}
		res, scope := s.Resource(), s.InstrumentationScope()
		var ss *tracepb.ScopeSpans
		for _, g := range scopes {
			if g.scope == scope && same(g.res, res) {
				ss = g.ss
				break
			}
		}
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: otlpScope(scope), Spans: []*tracepb.Span{}, SchemaUrl: scope.SchemaURL}
			scopes = append(scopes, scopeGroup{res, scope, ss})
			var rs *tracepb.ResourceSpans
			for i, r := range resources {
				if same(r, res) {
					rs = out[i]
					break
				}
			}
			if rs == nil {
				rs = &tracepb.ResourceSpans{Resource: otlpResource(res), SchemaUrl: res.SchemaURL()}
				out, resources = append(out, rs), append(resources, res)
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, b.span(s))
	}
	return out
}

func otlpResource(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return nil
	}
	var kvs []attribute.KeyValue
	for it := r.Iter(); it.Next(); {
		kvs = append(kvs, it.Attribute())
	}
	return &resourcepb.Resource{Attributes: otlpKeyValues(kvs)}
}

func otlpScope(s instrumentation.Scope) *commonpb.InstrumentationScope {
	if s == (instrumentation.Scope{}) {
		return nil
	}
	var kvs []attribute.KeyValue
	for it := s.Attributes.Iter(); it.Next(); {
		kvs = append(kvs, it.Attribute())
	}
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: otlpKeyValues(kvs)}
}

// otlpBatch holds the messages of a batch, made a slice of each kind at
// a time: the attributes of the common kinds (strings, numbers, booleans)
// come out of it; anything else (slices, maps, bytes) is made as the
// exporter makes it.
type otlpBatch struct {
	spans, attrs, strs, ints, floats, bools int

	spanv  []tracepb.Span
	status []tracepb.Status
	ids    []byte
	kv     []commonpb.KeyValue
	kvp    []*commonpb.KeyValue
	any    []commonpb.AnyValue
	str    []commonpb.AnyValue_StringValue
	int    []commonpb.AnyValue_IntValue
	float  []commonpb.AnyValue_DoubleValue
	bool   []commonpb.AnyValue_BoolValue
}

func (b *otlpBatch) count(s sdktrace.ReadOnlySpan) {
	b.spans++
	b.countAttrs(s.Attributes())
	for _, e := range s.Events() {
		b.countAttrs(e.Attributes)
	}
	for _, l := range s.Links() {
		b.countAttrs(l.Attributes)
	}
}

func (b *otlpBatch) countAttrs(kvs []attribute.KeyValue) {
	b.attrs += len(kvs)
	for _, kv := range kvs {
		switch kv.Value.Type() {
		case attribute.STRING:
			b.strs++
		case attribute.INT64:
			b.ints++
		case attribute.FLOAT64:
			b.floats++
		case attribute.BOOL:
			b.bools++
		}
	}
}

func (b *otlpBatch) alloc() {
	b.spanv, b.status, b.ids = make([]tracepb.Span, b.spans), make([]tracepb.Status, b.spans), make([]byte, 0, 32*b.spans)
	b.kv, b.kvp, b.any = make([]commonpb.KeyValue, b.attrs), make([]*commonpb.KeyValue, b.attrs), make([]commonpb.AnyValue, b.attrs)
	b.str, b.int = make([]commonpb.AnyValue_StringValue, b.strs), make([]commonpb.AnyValue_IntValue, b.ints)
	b.float, b.bool = make([]commonpb.AnyValue_DoubleValue, b.floats), make([]commonpb.AnyValue_BoolValue, b.bools)
}

// bytes is n bytes of b.ids holding v.
func (b *otlpBatch) bytes(v []byte) []byte {
	n := len(b.ids)
	b.ids = append(b.ids, v...)
	return b.ids[n:len(b.ids):len(b.ids)]
}

func (b *otlpBatch) span(sd sdktrace.ReadOnlySpan) *tracepb.Span {
	s, st := next(&b.spanv), next(&b.status)
	sc := sd.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	status := sd.Status()
	st.Message = status.Description
	switch status.Code {
	case codes.Ok:
		st.Code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		st.Code = tracepb.Status_STATUS_CODE_ERROR
	default:
		st.Code = tracepb.Status_STATUS_CODE_UNSET
	}
	s.TraceId, s.SpanId = b.bytes(tid[:]), b.bytes(sid[:])
	s.TraceState = sc.TraceState().String()
	s.Status = st
	s.StartTimeUnixNano = uint64(max(0, sd.StartTime().UnixNano()))
	s.EndTimeUnixNano = uint64(max(0, sd.EndTime().UnixNano()))
	s.Kind = otlpKind(sd.SpanKind())
	s.Name = sd.Name()
	s.Attributes = b.keyValues(sd.Attributes())
	s.DroppedAttributesCount = clampUint32(sd.DroppedAttributes())
	s.DroppedEventsCount = clampUint32(sd.DroppedEvents())
	s.DroppedLinksCount = clampUint32(sd.DroppedLinks())
	if es := sd.Events(); len(es) > 0 {
		s.Events = make([]*tracepb.Span_Event, len(es))
		for i, e := range es {
			s.Events[i] = &tracepb.Span_Event{Name: e.Name, TimeUnixNano: uint64(max(0, e.Time.UnixNano())),
				Attributes: b.keyValues(e.Attributes), DroppedAttributesCount: clampUint32(e.DroppedAttributeCount)}
		}
	}
	if ls := sd.Links(); len(ls) > 0 {
		s.Links = make([]*tracepb.Span_Link, 0, len(ls))
		for _, l := range ls {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			s.Links = append(s.Links, &tracepb.Span_Link{TraceId: b.bytes(ltid[:]), SpanId: b.bytes(lsid[:]),
				Attributes: b.keyValues(l.Attributes), DroppedAttributesCount: clampUint32(l.DroppedAttributeCount),
				Flags: spanFlags(l.SpanContext.TraceFlags(), l.SpanContext)})
		}
	}
	parent := sd.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		s.ParentSpanId = b.bytes(psid[:])
	}
	s.Flags = spanFlags(sc.TraceFlags(), parent)
	return s
}

// keyValues converts attributes, the common kinds from the batch's slices.
func (b *otlpBatch) keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := b.kvp[:len(kvs):len(kvs)]
	b.kvp = b.kvp[len(kvs):]
	for i, a := range kvs {
		kv, av := next(&b.kv), next(&b.any)
		kv.Key, kv.Value = string(a.Key), av
		switch a.Value.Type() {
		case attribute.STRING:
			v := next(&b.str)
			v.StringValue = a.Value.AsString()
			av.Value = v
		case attribute.INT64:
			v := next(&b.int)
			v.IntValue = a.Value.AsInt64()
			av.Value = v
		case attribute.FLOAT64:
			v := next(&b.float)
			v.DoubleValue = a.Value.AsFloat64()
			av.Value = v
		case attribute.BOOL:
			v := next(&b.bool)
			v.BoolValue = a.Value.AsBool()
			av.Value = v
		default:
			av.Value = otlpValue(a.Value).Value
		}
		out[i] = kv
	}
	return out
}

// next takes the first message of *s, the slice a batch made them in.
func next[T any](s *[]T) *T {
	v := &(*s)[0]
	*s = (*s)[1:]
	return v
}

// otlpKeyValues converts attributes one message at a time (a resource's,
// a scope's, those inside a slice or a map value).
func otlpKeyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: otlpValue(kv.Value)})
	}
	return out
}

// otlpValue converts a value of any kind, as the exporter does.
func otlpValue(v attribute.Value) *commonpb.AnyValue {
	av := new(commonpb.AnyValue)
	switch v.Type() {
	case attribute.BOOL:
		av.Value = &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}
	case attribute.INT64:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}
	case attribute.FLOAT64:
		av.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}
	case attribute.STRING:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: v.AsString()}
	case attribute.BYTESLICE:
		av.Value = &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}
	case attribute.BOOLSLICE:
		av.Value = arrayOf(v.AsBoolSlice(), func(x bool) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
		})
	case attribute.INT64SLICE:
		av.Value = arrayOf(v.AsInt64Slice(), func(x int64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: x}}
		})
	case attribute.FLOAT64SLICE:
		av.Value = arrayOf(v.AsFloat64Slice(), func(x float64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
		})
	case attribute.STRINGSLICE:
		av.Value = arrayOf(v.AsStringSlice(), func(x string) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
		})
	case attribute.SLICE:
		av.Value = arrayOf(v.AsSlice(), otlpValue)
	case attribute.MAP:
		av.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: otlpKeyValues(v.AsMap())}}
	case attribute.EMPTY:
	default:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: "INVALID"}
	}
	return av
}

func arrayOf[T any](xs []T, f func(T) *commonpb.AnyValue) *commonpb.AnyValue_ArrayValue {
	vs := make([]*commonpb.AnyValue, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}
}

func otlpKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

// spanFlags is the W3C trace flags, with the bits that say whether the
// parent is remote (known, and whether it is).
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return flags
}

func clampUint32(v int) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}
