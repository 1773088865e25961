// Package wire is the guest ABI's wire contract, version 1: every name,
// status, message and answer that crosses between packd and a module.
// ../../GUEST-ABI.md is the normative text. It is the one definition:
// packd's host side uses it through package abi, and the Go SDK
// (package guest) directly. It needs nothing but the standard library.
package wire

import (
	"encoding/json"
	"slices"
	"strings"
)

const (
	// GuestABIVersion is what a module's kindgi_abi_version export returns
	// for the version this package describes.
	GuestABIVersion = 1

	// ImportModule is the module name of the host functions a guest imports.
	ImportModule = "kindgi"

	ImportRequestLen    = "request_len"    // () -> i32
	ImportRequestRead   = "request_read"   // (ptr i32)
	ImportResponseWrite = "response_write" // (ptr i32, len i32)
	ImportLog           = "log"            // (level i32, ptr i32, len i32)

	// Outbound HTTP (optional imports): http_request sends one request and
	// returns the length of its HTTPAnswer (low 32 bits) and of the
	// response body (high 32 bits); http_response_read copies both into
	// guest memory.
	ImportHTTPRequest      = "http_request"       // (head_ptr i32, head_len i32, body_ptr i32, body_len i32) -> i64
	ImportHTTPResponseRead = "http_response_read" // (head_ptr i32, body_ptr i32)

	// ImportJSONScan (optional) finds where the JSON value at the start of
	// [ptr, ptr+len) ends and checks it is valid, natively: -1 when it is
	// not, else the offset past it, bit 32 set when white space was found
	// outside strings, bit 33 when a string holds a character json.Marshal
	// escapes (<, >, &, U+2028, U+2029).
	ImportJSONScan = "json_scan" // (ptr i32, len i32) -> i64

	// ImportJSONMembers (optional) reads the members of the JSON object at
	// the start of [ptr, ptr+len), checking it as json_scan does, and
	// writes the first cap of them at out, 20 bytes each (five
	// little-endian u32: key start and end inside its quotes, value start
	// and end, flags); -1 when it is not one, else the member count (low
	// 32 bits) and the offset past the object (high 32 bits).
	ImportJSONMembers = "json_members" // (ptr i32, len i32, out i32, cap i32) -> i64

	// ImportRequestFields (optional) writes where each of the call's
	// request fields lies (RequestFields, in that order, FieldSize bytes
	// each), the first cap of them at out, and returns how many fields it
	// knows; -1 when the request is not in the shape they describe.
	ImportRequestFields = "request_fields" // (out i32, cap i32) -> i32

	ExportABIVersion = "kindgi_abi_version" // () -> i32
	ExportDescribe   = "kindgi_describe"    // () -> i32
	ExportCall       = "kindgi_call"        // () -> i32
	ExportInitialize = "_initialize"        // optional reactor initialiser
	ExportMemory     = "memory"
)

// Names packd's instrumentation adds to every module (fuel metering, the
// stack bound, the state of an instance). A module must not import or
// export them itself: such a module is refused.
const (
	ImportFuelRefill   = "fuel_refill"  // () -> (), of ImportModule
	ExportFuel         = "kindgi_fuel"  // the fuel counter
	ExportStack        = "kindgi_stack" // the estimated bytes of open wasm frames
	ExportGlobalPrefix = "kindgi_g"     // + index: each mutable global of the module
)

// Status is what kindgi_call and kindgi_describe return.
type Status int32

const (
	// StatusOK: the response is the tool output, the check result, or (for
	// kindgi_describe) the description.
	StatusOK Status = 0
	// StatusThrown: the handler threw; the response is a Thrown.
	StatusThrown Status = 1
	// StatusNoHandler: the module has no handler for the requested id.
	StatusNoHandler Status = 2
)

// Log levels of the log import.
const (
	LogDebug = 0
	LogInfo  = 1
	LogWarn  = 2
	LogError = 3
)

// Wildcard in a description's tool list means the module serves any tool id.
const Wildcard = "*"

// Request kinds the guest reads from request_read.
const (
	KindInvoke      = "invoke"
	KindCheckInvoke = "check-invoke"
)

// Request is the request message a guest reads from request_read: an
// invoke names its tool and carries input and ctx; a check-invoke names
// its check and carries config and trace.
type Request struct {
	Kind string `json:"kind"`
	Tool struct {
		ID      string `json:"id"`
		Version string `json:"version,omitempty"`
	} `json:"tool"`
	Check struct {
		ID string `json:"id"`
	} `json:"check"`
	Input  json.RawMessage `json:"input"`
	Ctx    json.RawMessage `json:"ctx"`
	Config json.RawMessage `json:"config"`
	Trace  json.RawMessage `json:"trace"`
}

// Description is kindgi_describe's answer: the tool ids (or Wildcard) and
// check ids a module serves, and, for `packd index`, what it knows of each
// (ToolSpecs, CheckSpecs) and the environment names it reads (Env): all
// optional, in ABI v1 as in any later version; a host that does not read
// them ignores them.
type Description struct {
	Tools      []string    `json:"tools"`
	Checks     []string    `json:"checks"`
	ToolSpecs  []ToolSpec  `json:"toolSpecs,omitempty"`
	CheckSpecs []CheckSpec `json:"checkSpecs,omitempty"`
	Env        *EnvSpec    `json:"env,omitempty"`
}

// ToolSpec is what a module says of one of its tools: the index entry
// `packd index` writes for it. Schemas are JSON Schemas (draft 2020-12);
// Limits and Network are the entry's `limits` and `network` objects
// (docs/index-format.md).
type ToolSpec struct {
	ID          string          `json:"id"`
	Version     string          `json:"version,omitempty"`
	Description string          `json:"description,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
	Limits      json.RawMessage `json:"limits,omitempty"`
	Network     json.RawMessage `json:"network,omitempty"`
	// The manifest's data, in kindgi's shape, written as given:
	// effects and needs (arrays), needsSpec and spec (objects), sandbox
	// (a string), mutating (a boolean).
	Effects   json.RawMessage `json:"effects,omitempty"`
	Mutating  *bool           `json:"mutating,omitempty"`
	Needs     json.RawMessage `json:"needs,omitempty"`
	NeedsSpec json.RawMessage `json:"needsSpec,omitempty"`
	Sandbox   string          `json:"sandbox,omitempty"`
	Spec      json.RawMessage `json:"spec,omitempty"`
}

// CheckSpec is what a module says of one of its guardrail checks. Guardrail
// is the index entry's id when it is not the check id (the entry's checkId
// is then ID).
type CheckSpec struct {
	ID           string          `json:"id"`
	Guardrail    string          `json:"guardrail,omitempty"`
	Kind         string          `json:"kind,omitempty"`
	Action       json.RawMessage `json:"action,omitempty"`
	Severity     string          `json:"severity,omitempty"`
	Description  string          `json:"description,omitempty"`
	ConfigSchema json.RawMessage `json:"configSchema,omitempty"`
	Limits       json.RawMessage `json:"limits,omitempty"`
	Network      json.RawMessage `json:"network,omitempty"`
	// What a guardrail object says besides (kindgi's Guardrail): data.
	Name    string          `json:"name,omitempty"`
	Scope   json.RawMessage `json:"scope,omitempty"`
	Config  json.RawMessage `json:"config,omitempty"`
	Sandbox string          `json:"sandbox,omitempty"`
}

// EnvSpec is the process environment names a module reads: the index's
// `env` (names the service must have, and names it passes when set).
type EnvSpec struct {
	Required []string `json:"required,omitempty"`
	Optional []string `json:"optional,omitempty"`
}

// Thrown is the response of a StatusThrown return: what the handler threw.
type Thrown struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack"`
}

// EncodeThrown is a thrown error's response bytes.
func EncodeThrown(t Thrown) []byte {
	b, _ := json.Marshal(t)
	return b
}

// HTTPRequest is what a guest passes to http_request, the body aside (it
// follows as raw bytes): a method (GET when empty), an absolute http or
// https URL, and headers, each name with its values.
type HTTPRequest struct {
	Method  string              `json:"method,omitempty"`
	URL     string              `json:"url"`
	Headers map[string][]string `json:"headers,omitempty"`
}

// HTTPAnswer is what http_response_read copies first: a response's status
// and headers and the length of its body, which it copies next; or, when
// packd did not send the request or it failed, Error and nothing else.
type HTTPAnswer struct {
	Status     int                 `json:"status,omitempty"`
	Headers    map[string][]string `json:"headers,omitempty"`
	BodyLength int                 `json:"bodyLength"`
	Error      *HTTPError          `json:"error,omitempty"`
}

// HTTPError says why a request got no response: Reason is one of the
// Egress* reasons, Message says it in words.
type HTTPError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func (e *HTTPError) Error() string { return e.Reason + ": " + e.Message }

// Reasons an outbound request got no response (HTTPError.Reason).
const (
	EgressNotAllowed           = "network-not-allowed"    // the tool's index entry allows no network
	EgressHostNotAllowed       = "host-not-allowed"       // the host is not on the tool's allowlist
	EgressAddressNotAllowed    = "address-not-allowed"    // the host resolves to a loopback, private or other special address
	EgressBadRequest           = "bad-request"            // not a request packd can send (URL, scheme, method, header)
	EgressRequestLimit         = "request-limit"          // the call has made as many requests as it may
	EgressTooLarge             = "request-too-large"      // the request body is over its cap
	EgressResponseTooLarge     = "response-too-large"     // the response body is over its cap
	EgressFailed               = "failed"                 // the connection or the exchange failed
	EgressRedirect             = "redirect-not-followed"  // too many redirects
	EgressReadOnly             = "read-only"              // a method that writes, from a tool that says mutating: false
	EgressCredentialMissing    = "credential-missing"     // the credential the index binds to the host is not set for the call
	EgressCredentialNeedsHTTPS = "credential-needs-https" // a bound credential over plain http to an address the operator does not allow
)

// The fields of a request that request_fields finds, in the order it
// writes them: each is the value of a member of the request (kind,
// input, ctx, config, trace), of its tool or check, or of its ctx.
// request_fields writes three little-endian u32 for each: where its value
// starts in the request (as request_read writes it) and its length, and
// its flags, as json_members writes a member's. A string field's
// (StringFields) start and length are of what lies inside its quotes.
// All three 0: the request has no such member.
//
// It answers -1, and the guest reads the request itself, when the request
// is not an object whose members, and those of its tool, check and ctx,
// all have plain keys (bytes 0x20-0x7f, no backslash), none twice and
// none a field's name but for ASCII case; whose tool, check and ctx, when
// present, are objects; and whose string fields, when present, are
// strings of plain bytes. Then each field's bytes are all that a decoder
// of the request (encoding/json's too) takes from it.
const (
	FieldKind = iota
	FieldToolID
	FieldToolVersion
	FieldCheckID
	FieldInput
	FieldCtx
	FieldConfig
	FieldTrace
	FieldTenantID
	FieldRunID
	FieldProjectID
	FieldOrgID
	FieldRequestID
	FieldIdempotencyKey
	FieldEnv
	FieldSecrets
	FieldSettings
	FieldCount // how many fields request_fields knows

	// FieldSize is the bytes request_fields writes for each field.
	FieldSize = 12

	// StringFields has bit i set for each field i that is a string.
	StringFields = 1<<FieldKind | 1<<FieldToolID | 1<<FieldToolVersion | 1<<FieldCheckID |
		1<<FieldTenantID | 1<<FieldRunID | 1<<FieldProjectID | 1<<FieldOrgID | 1<<FieldRequestID | 1<<FieldIdempotencyKey
)

// RequestFields names each field by its path in the request, in the
// order of the Field constants: a key of the request, or a key of the
// object that is the value of one ("tool.id"). A later packd may know
// more fields: they come after these, which keep their places.
var RequestFields = [FieldCount]string{
	"kind", "tool.id", "tool.version", "check.id", "input", "ctx", "config", "trace",
	"ctx.tenantId", "ctx.runId", "ctx.projectId", "ctx.orgId", "ctx.requestId", "ctx.idempotencyKey",
	"ctx.env", "ctx.secrets", "ctx.settings",
}

// FieldObject is an object of a request whose members request_fields
// reads: the keys it looks at, and for each the field whose value it is
// (-1: none) and the object that value must be (nil: any value).
type FieldObject struct {
	Keys  []string
	Field []int
	Inner []*FieldObject
}

// RequestObject is the request's, as RequestFields makes it.
var RequestObject = fieldObject("")

func fieldObject(prefix string) *FieldObject {
	o := &FieldObject{}
	add := func(key string) int {
		if i := slices.Index(o.Keys, key); i >= 0 {
			return i
		}
		o.Keys, o.Field, o.Inner = append(o.Keys, key), append(o.Field, -1), append(o.Inner, nil)
		return len(o.Keys) - 1
	}
	for f, path := range RequestFields {
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok {
			continue
		}
		if key, _, nested := strings.Cut(rest, "."); nested {
			if i := add(key); o.Inner[i] == nil {
				o.Inner[i] = fieldObject(prefix + key + ".")
			}
		} else {
			o.Field[add(key)] = f
		}
	}
	return o
}

// Lookup is the index in o.Keys of key (-1: none); refuse reports a key
// that is one of them but for ASCII case (encoding/json would take it for
// that one; request_fields answers -1).
func (o *FieldObject) Lookup(key []byte) (i int, refuse bool) {
	for i, k := range o.Keys {
		if string(key) == k {
			return i, false
		}
	}
	for _, k := range o.Keys {
		if asciiFold(key, k) {
			return -1, true
		}
	}
	return -1, false
}

func asciiFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
