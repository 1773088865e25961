package abi

import (
	"github.com/kindgi/packd/internal/ojson"
)

// ProtocolVersion is the `v` of every message.
const ProtocolVersion = 2

// Code is why running pack code did not produce a result.
type Code string

// The 14 error codes of the protocol. No other code may appear in a message.
const (
	CodeInputValidationFailed  Code = "input-validation-failed"
	CodeOutputValidationFailed Code = "output-validation-failed"
	CodeHandlerImportFailed    Code = "handler-import-failed"
	CodeHandlerShapeInvalid    Code = "handler-shape-invalid"
	CodeHandlerThrow           Code = "handler-throw"
	CodeCheckShapeInvalid      Code = "check-shape-invalid"
	CodeMalformedMessage       Code = "malformed-message"
	CodeUnknownProtocolVersion Code = "unknown-protocol-version"
	CodeUnexpectedMessageKind  Code = "unexpected-message-kind"
	CodeToolNotInPack          Code = "tool-not-in-pack"
	CodeCheckNotInPack         Code = "check-not-in-pack"
	CodeToolVersionMismatch    Code = "tool-version-mismatch"
	CodeDeadlineExceeded       Code = "deadline-exceeded"
	CodeCancelled              Code = "cancelled"
)

// Codes lists every error code in the order the protocol schema gives them
// (a new slice each time: callers cannot change the list).
func Codes() []Code {
	return []Code{
		CodeInputValidationFailed, CodeOutputValidationFailed, CodeHandlerImportFailed,
		CodeHandlerShapeInvalid, CodeHandlerThrow, CodeCheckShapeInvalid,
		CodeMalformedMessage, CodeUnknownProtocolVersion, CodeUnexpectedMessageKind,
		CodeToolNotInPack, CodeCheckNotInPack, CodeToolVersionMismatch,
		CodeDeadlineExceeded, CodeCancelled,
	}
}

// Cause is a serialized throw: `{name, message, stack}`.
type Cause struct {
	Name    string
	Message string
	Stack   string
}

// Issue is one validation issue, shaped as Ajv reports it. Params is an
// *ojson.Object so that its keys keep Ajv's order.
type Issue struct {
	InstancePath string
	SchemaPath   string
	Keyword      string
	Params       *ojson.Object
	Message      string
	// PropertyName is set on issues found inside propertyNames.
	PropertyName *string
}

// Value returns the issue as an ordered JSON object.
func (i Issue) Value() *ojson.Object {
	o := &ojson.Object{
		Keys: []string{"instancePath", "schemaPath", "keyword", "params", "message"},
		Vals: []any{i.InstancePath, i.SchemaPath, i.Keyword, paramsOrEmpty(i.Params), i.Message},
	}
	if i.PropertyName != nil {
		o.Set("propertyName", *i.PropertyName)
	}
	return o
}

func paramsOrEmpty(p *ojson.Object) *ojson.Object {
	if p == nil {
		return &ojson.Object{}
	}
	return p
}

// Error is a protocol error message.
type Error struct {
	Code    Code
	Message string
	ToolID  string
	CheckID string
	Cause   *Cause
	Issues  []Issue
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Encode writes the error message with the key order of the existing services:
// v, kind, code, message, toolId, checkId, cause, issues.
func (e *Error) Encode() []byte {
	o := &ojson.Object{
		Keys: []string{"v", "kind", "code", "message"},
		Vals: []any{float64(ProtocolVersion), "error", string(e.Code), e.Message},
	}
	if e.ToolID != "" {
		o.Set("toolId", e.ToolID)
	}
	if e.CheckID != "" {
		o.Set("checkId", e.CheckID)
	}
	if e.Cause != nil {
		o.Set("cause", &ojson.Object{
			Keys: []string{"name", "message", "stack"},
			Vals: []any{e.Cause.Name, e.Cause.Message, e.Cause.Stack},
		})
	}
	if e.Issues != nil {
		arr := make([]any, len(e.Issues))
		for i, is := range e.Issues {
			arr[i] = is.Value()
		}
		o.Set("issues", arr)
	}
	return ojson.Encode(o)
}

// EncodeResult writes a tool result message around an output value.
func EncodeResult(output any) []byte { return encodeAnswer("result", "output", output) }

// EncodeCheckResult writes a check result message around a check result value.
func EncodeCheckResult(result any) []byte { return encodeAnswer("check-result", "result", result) }

// encodeAnswer writes {"v":2,"kind":kind,key:v}, as the ordered object
// would be written, without building one.
func encodeAnswer(kind, key string, v any) []byte {
	b := ojson.Append(append(make([]byte, 0, 128), `{"v":`...), float64(ProtocolVersion))
	b = ojson.AppendString(append(b, `,"kind":`...), kind)
	b = ojson.AppendString(append(b, ','), key)
	return append(ojson.Append(append(b, ':'), v), '}')
}
