package service

import (
	"context"
	"fmt"
	"math"
	"sync"

	"go.opentelemetry.io/otel/attribute"
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
// instrumentation scope as otlptrace's exporter does. A scope's spans are
// written in protobuf's wire form here (appendSpan) and carried as its
// ScopeSpans message's unknown fields, which proto.Marshal copies as they
// are: a collector reads them as the message's spans. Building a message a
// span and an attribute, then marshalling them by reflection, was most of
// what exporting cost (issue 43).
func otlpSpans(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	var out []*tracepb.ResourceSpans
	type scopeGroup struct {
		res   *resource.Resource
		scope instrumentation.Scope
		ss    *tracepb.ScopeSpans
		wire  []byte
	}
	var scopes []*scopeGroup
	var resources []*resource.Resource // beside out
	same := func(a, b *resource.Resource) bool { return a == b || a.Equivalent() == b.Equivalent() }
	for _, s := range spans {
		if s == nil {
			continue
		}
		res, scope := s.Resource(), s.InstrumentationScope()
		var g *scopeGroup
		for _, sg := range scopes {
			if sg.scope == scope && same(sg.res, res) {
				g = sg
				break
			}
		}
		if g == nil {
			g = &scopeGroup{res: res, scope: scope, wire: make([]byte, 0, 512*len(spans)/(len(scopes)+1))}
			g.ss = &tracepb.ScopeSpans{Scope: otlpScope(scope), SchemaUrl: scope.SchemaURL}
			scopes = append(scopes, g)
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
			rs.ScopeSpans = append(rs.ScopeSpans, g.ss)
		}
		g.wire = appendSpan(g.wire, s)
	}
	for _, g := range scopes {
		g.ss.ProtoReflect().SetUnknown(g.wire)
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
