package service

import (
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// The field numbers of OTLP's trace messages (opentelemetry/proto/trace/v1
// and common/v1), which appendSpan writes. Fields left at their zero
// value are left out, as proto3's encoding does; a oneof member and a
// message field are written whenever they are set, empty or not.
const (
	fScopeSpansSpans = 2

	fSpanTraceID       = 1
	fSpanSpanID        = 2
	fSpanTraceState    = 3
	fSpanParentSpanID  = 4
	fSpanName          = 5
	fSpanKind          = 6
	fSpanStart         = 7
	fSpanEnd           = 8
	fSpanAttributes    = 9
	fSpanDroppedAttrs  = 10
	fSpanEvents        = 11
	fSpanDroppedEvents = 12
	fSpanLinks         = 13
	fSpanDroppedLinks  = 14
	fSpanStatus        = 15
	fSpanFlags         = 16

	fEventTime         = 1
	fEventName         = 2
	fEventAttributes   = 3
	fEventDroppedAttrs = 4

	fLinkTraceID      = 1
	fLinkSpanID       = 2
	fLinkAttributes   = 4
	fLinkDroppedAttrs = 5
	fLinkFlags        = 6

	fStatusMessage = 2
	fStatusCode    = 3

	fKeyValueKey   = 1
	fKeyValueValue = 2

	fAnyString = 1
	fAnyBool   = 2
	fAnyInt    = 3
	fAnyDouble = 4
	fAnyArray  = 5
	fAnyKvlist = 6
	fAnyBytes  = 7

	fListValues = 1 // ArrayValue.values and KeyValueList.values
)

// appendSpan appends one span as ScopeSpans' field 2, the message
// otlptrace's exporter makes of it (TestOTLPSpansAreTheExportersOwn).
// Strings that are not UTF-8, which proto.Marshal refuses (losing the
// whole batch), are sent with U+FFFD in place of the bytes that are not.
func appendSpan(b []byte, sd sdktrace.ReadOnlySpan) []byte {
	b, at := beginMessage(b, fScopeSpansSpans)
	sc, parent := sd.SpanContext(), sd.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytesField(b, fSpanTraceID, tid[:])
	b = appendBytesField(b, fSpanSpanID, sid[:])
	b = appendStringField(b, fSpanTraceState, sc.TraceState().String())
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytesField(b, fSpanParentSpanID, psid[:])
	}
	b = appendStringField(b, fSpanName, sd.Name())
	b = appendVarintField(b, fSpanKind, uint64(otlpKind(sd.SpanKind())))
	b = appendFixed64Field(b, fSpanStart, unixNano(sd.StartTime()))
	b = appendFixed64Field(b, fSpanEnd, unixNano(sd.EndTime()))
	b = appendKeyValues(b, fSpanAttributes, sd.Attributes())
	b = appendVarintField(b, fSpanDroppedAttrs, uint64(clampUint32(sd.DroppedAttributes())))
	for _, e := range sd.Events() {
		var ev int
		b, ev = beginMessage(b, fSpanEvents)
		b = appendFixed64Field(b, fEventTime, unixNano(e.Time))
		b = appendStringField(b, fEventName, e.Name)
		b = appendKeyValues(b, fEventAttributes, e.Attributes)
		b = appendVarintField(b, fEventDroppedAttrs, uint64(clampUint32(e.DroppedAttributeCount)))
		b = endMessage(b, ev)
	}
	b = appendVarintField(b, fSpanDroppedEvents, uint64(clampUint32(sd.DroppedEvents())))
	for _, l := range sd.Links() {
		var lk int
		b, lk = beginMessage(b, fSpanLinks)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b = appendBytesField(b, fLinkTraceID, ltid[:])
		b = appendBytesField(b, fLinkSpanID, lsid[:])
		b = appendKeyValues(b, fLinkAttributes, l.Attributes)
		b = appendVarintField(b, fLinkDroppedAttrs, uint64(clampUint32(l.DroppedAttributeCount)))
		b = appendFixed32Field(b, fLinkFlags, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		b = endMessage(b, lk)
	}
	b = appendVarintField(b, fSpanDroppedLinks, uint64(clampUint32(sd.DroppedLinks())))
	var st int
	b, st = beginMessage(b, fSpanStatus)
	status := sd.Status()
	b = appendStringField(b, fStatusMessage, status.Description)
	code := tracepb.Status_STATUS_CODE_UNSET
	switch status.Code {
	case codes.Ok:
		code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		code = tracepb.Status_STATUS_CODE_ERROR
	}
	b = appendVarintField(b, fStatusCode, uint64(code))
	b = endMessage(b, st)
	b = appendFixed32Field(b, fSpanFlags, spanFlags(sc.TraceFlags(), parent))
	return endMessage(b, at)
}

// appendKeyValues appends each attribute as a KeyValue message, field f.
func appendKeyValues(b []byte, f protowire.Number, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		var at, v int
		b, at = beginMessage(b, f)
		b = appendStringField(b, fKeyValueKey, string(kv.Key))
		b, v = beginMessage(b, fKeyValueValue)
		b = appendAnyValue(b, kv.Value)
		b = endMessage(b, v)
		b = endMessage(b, at)
	}
	return b
}

// appendAnyValue appends an AnyValue's fields, as otlpValue converts it.
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		return appendBool(b, fAnyBool, v.AsBool())
	case attribute.INT64:
		return appendInt(b, fAnyInt, v.AsInt64())
	case attribute.FLOAT64:
		return appendDouble(b, fAnyDouble, v.AsFloat64())
	case attribute.STRING:
		return appendString(b, fAnyString, v.AsString())
	case attribute.BYTESLICE:
		return protowire.AppendBytes(protowire.AppendTag(b, fAnyBytes, protowire.BytesType), v.AsByteSlice())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), func(b []byte, x bool) []byte { return appendBool(b, fAnyBool, x) })
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), func(b []byte, x int64) []byte { return appendInt(b, fAnyInt, x) })
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), func(b []byte, x float64) []byte { return appendDouble(b, fAnyDouble, x) })
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), func(b []byte, x string) []byte { return appendString(b, fAnyString, x) })
	case attribute.SLICE:
		return appendArray(b, v.AsSlice(), appendAnyValue)
	case attribute.MAP:
		b, at := beginMessage(b, fAnyKvlist)
		b = appendKeyValues(b, fListValues, v.AsMap())
		return endMessage(b, at)
	case attribute.EMPTY:
		return b
	}
	return appendString(b, fAnyString, "INVALID")
}

// appendArray appends an ArrayValue of xs, each an AnyValue that f writes.
func appendArray[T any](b []byte, xs []T, f func([]byte, T) []byte) []byte {
	b, at := beginMessage(b, fAnyArray)
	for _, x := range xs {
		var v int
		b, v = beginMessage(b, fListValues)
		b = f(b, x)
		b = endMessage(b, v)
	}
	return endMessage(b, at)
}

// beginMessage appends field f's tag and a one-byte length that
// endMessage, given the offset returned, makes the message's length.
func beginMessage(b []byte, f protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, f, protowire.BytesType)
	at := len(b)
	return append(b, 0), at
}

// endMessage writes the length of the message begun at b[at], moving the
// message up when its length takes more than one byte.
func endMessage(b []byte, at int) []byte {
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	size := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, size-1)...)
	copy(b[at+size:], b[at+1:at+1+n])
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

func appendString(b []byte, f protowire.Number, s string) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return protowire.AppendString(protowire.AppendTag(b, f, protowire.BytesType), s)
}

func appendBool(b []byte, f protowire.Number, v bool) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, f, protowire.VarintType), protowire.EncodeBool(v))
}

func appendInt(b []byte, f protowire.Number, v int64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, f, protowire.VarintType), uint64(v))
}

func appendDouble(b []byte, f protowire.Number, v float64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(b, f, protowire.Fixed64Type), math.Float64bits(v))
}

// The proto3 fields: left out at their zero value.

func appendStringField(b []byte, f protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(b, f, s)
}

func appendBytesField(b []byte, f protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return protowire.AppendBytes(protowire.AppendTag(b, f, protowire.BytesType), v)
}

func appendVarintField(b []byte, f protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, f, protowire.VarintType), v)
}

func appendFixed64Field(b []byte, f protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, f, protowire.Fixed64Type), v)
}

func appendFixed32Field(b []byte, f protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, f, protowire.Fixed32Type), v)
}

// unixNano is t in nanoseconds since the epoch, 0 before it.
func unixNano(t time.Time) uint64 {
	return uint64(max(0, t.UnixNano()))
}
