package abi

import (
	"encoding/json"

	"github.com/kindgi/packd/abi/guest/wire"
	"github.com/kindgi/packd/internal/ojson"
)

// The guest ABI, version 1. Its wire contract (names, statuses, the
// request, the description, a thrown error) is defined once, in package
// wire of the Go SDK's module (abi/guest/wire, standard library only, so
// that pack authors depend on nothing else); abi gives packd's host side
// the same definitions, and the host-side codecs. GUEST-ABI.md is the
// normative text.
const (
	GuestABIVersion = wire.GuestABIVersion

	ImportModule        = wire.ImportModule
	ImportRequestLen    = wire.ImportRequestLen
	ImportRequestRead   = wire.ImportRequestRead
	ImportResponseWrite = wire.ImportResponseWrite
	ImportLog           = wire.ImportLog

	ImportHTTPRequest      = wire.ImportHTTPRequest
	ImportHTTPResponseRead = wire.ImportHTTPResponseRead

	ImportJSONScan    = wire.ImportJSONScan
	ImportJSONMembers = wire.ImportJSONMembers

	ImportRequestFields = wire.ImportRequestFields

	ExportABIVersion = wire.ExportABIVersion
	ExportDescribe   = wire.ExportDescribe
	ExportCall       = wire.ExportCall
	ExportInitialize = wire.ExportInitialize
	ExportMemory     = wire.ExportMemory

	// ExportJSBundle is exported by packd's JavaScript runtime (sdk/js) and
	// by no other module: kindgi_js_bundle(0) is the length of the pack's
	// bundle, kindgi_js_bundle(dst) copies it to dst.
	ExportJSBundle = "kindgi_js_bundle"
	// ExportPyBundle is packd's Python runtime's (sdk/py) likewise: the
	// pack's sources.
	ExportPyBundle = "kindgi_py_bundle"

	ImportFuelRefill   = wire.ImportFuelRefill
	ExportFuel         = wire.ExportFuel
	ExportStack        = wire.ExportStack
	ExportGlobalPrefix = wire.ExportGlobalPrefix

	StatusOK        = wire.StatusOK
	StatusThrown    = wire.StatusThrown
	StatusNoHandler = wire.StatusNoHandler

	LogDebug = wire.LogDebug
	LogInfo  = wire.LogInfo
	LogWarn  = wire.LogWarn
	LogError = wire.LogError

	EgressNotAllowed           = wire.EgressNotAllowed
	EgressHostNotAllowed       = wire.EgressHostNotAllowed
	EgressAddressNotAllowed    = wire.EgressAddressNotAllowed
	EgressBadRequest           = wire.EgressBadRequest
	EgressRequestLimit         = wire.EgressRequestLimit
	EgressTooLarge             = wire.EgressTooLarge
	EgressResponseTooLarge     = wire.EgressResponseTooLarge
	EgressFailed               = wire.EgressFailed
	EgressRedirect             = wire.EgressRedirect
	EgressReadOnly             = wire.EgressReadOnly
	EgressCredentialMissing    = wire.EgressCredentialMissing
	EgressCredentialNeedsHTTPS = wire.EgressCredentialNeedsHTTPS

	Wildcard        = wire.Wildcard
	KindInvoke      = wire.KindInvoke
	KindCheckInvoke = wire.KindCheckInvoke
)

// The wire types (see package wire).
type (
	Status      = wire.Status
	Request     = wire.Request
	Description = wire.Description
	ToolSpec    = wire.ToolSpec
	CheckSpec   = wire.CheckSpec
	EnvSpec     = wire.EnvSpec
	HTTPRequest = wire.HTTPRequest
	HTTPAnswer  = wire.HTTPAnswer
	HTTPError   = wire.HTTPError
)

// Serves reports whether packd serves a module of guest ABI version v.
func Serves(v int32) bool { return v == GuestABIVersion }

// EncodeInvoke is the request message of a tool call; input and ctx are
// ordered JSON values (ojson), written with their key order.
func EncodeInvoke(toolID, version string, input, ctx any) []byte {
	b, _ := EncodeInvokeMarked(toolID, version, input, ctx)
	return b
}

// InvokeMarks says where EncodeInvokeMarked put each part of its
// message, as [start, end) of its bytes; a string's is what lies inside
// its quotes. Version is [0 0] when there is none. CtxKeys and CtxVals
// hold the first CtxMembers members of ctx when it is an *ojson.Object
// (CtxMembers is -1 when it is not one, or has more than MaxMarkedCtx).
type InvokeMarks struct {
	Kind, ToolID, Version, Input, Ctx [2]uint32
	CtxMembers                        int
	CtxKeys, CtxVals                  [MaxMarkedCtx][2]uint32
}

// MaxMarkedCtx is the most members of a call's ctx InvokeMarks holds.
const MaxMarkedCtx = 16

// EncodeInvokeMarked is EncodeInvoke, with where it put each part.
func EncodeInvokeMarked(toolID, version string, input, ctx any) ([]byte, InvokeMarks) {
	var m InvokeMarks
	b := append(make([]byte, 0, 256), `{"kind":`...)
	b = markString(b, KindInvoke, &m.Kind)
	b = markString(append(b, `,"tool":{"id":`...), toolID, &m.ToolID)
	if version != "" {
		b = markString(append(b, `,"version":`...), version, &m.Version)
	}
	b = append(b, `},"input":`...)
	m.Input[0] = uint32(len(b))
	b = ojson.Append(b, input)
	m.Input[1] = uint32(len(b))
	b = append(b, `,"ctx":`...)
	m.Ctx[0] = uint32(len(b))
	o, ok := ctx.(*ojson.Object)
	if !ok || len(o.Keys) > MaxMarkedCtx {
		m.CtxMembers = -1
		b = ojson.Append(b, ctx)
	} else {
		// As ojson.Append writes an object, a member at a time.
		b = append(b, '{')
		for i, k := range o.Keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = markString(b, k, &m.CtxKeys[i])
			b = append(b, ':')
			m.CtxVals[i][0] = uint32(len(b))
			b = ojson.Append(b, o.Vals[i])
			m.CtxVals[i][1] = uint32(len(b))
		}
		b = append(b, '}')
		m.CtxMembers = len(o.Keys)
	}
	m.Ctx[1] = uint32(len(b))
	return append(b, '}'), m
}

// markString appends s as a JSON string, and where its inside lies to at.
func markString(b []byte, s string, at *[2]uint32) []byte {
	at[0] = uint32(len(b)) + 1
	b = ojson.AppendString(b, s)
	at[1] = uint32(len(b)) - 1
	return b
}

// EncodeCheckInvoke is the request message of a guardrail check.
func EncodeCheckInvoke(checkID string, config, trace any) []byte {
	b := append(make([]byte, 0, 256), `{"kind":`...)
	b = ojson.AppendString(b, KindCheckInvoke)
	b = ojson.AppendString(append(b, `,"check":{"id":`...), checkID)
	b = ojson.Append(append(b, `},"config":`...), config)
	return append(ojson.Append(append(b, `,"trace":`...), trace), '}')
}

// ReadThrown reads a StatusThrown response as the error's cause. A guest
// may leave out name (then "Error") and stack; a response without a
// string message is shown whole as the message.
func ReadThrown(body []byte) Cause {
	var t struct {
		Name    *string `json:"name"`
		Message *string `json:"message"`
		Stack   *string `json:"stack"`
	}
	if err := json.Unmarshal(body, &t); err != nil || t.Message == nil {
		return Cause{Name: "Error", Message: string(body)}
	}
	c := Cause{Name: "Error", Message: *t.Message}
	if t.Name != nil && *t.Name != "" {
		c.Name = *t.Name
	}
	if t.Stack != nil {
		c.Stack = *t.Stack
	}
	return c
}
