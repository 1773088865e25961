package guest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/kindgi/packd/abi/guest/wire"
)

const fullCtx = `{"tenantId":"t","runId":"r","projectId":"p","orgId":"o","requestId":"q","idempotencyKey":"k","env":{"A":"b","C":""},"secrets":{"s":{"k":"v"},"n":null},"settings":{"block-1":{"tone":"dry"}},"extra":[1]}`

// decodeCases are requests and ctx values the fast decoders must read as
// encoding/json does, or leave to it.
var decodeCases = []string{
	`{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`,
	` { "kind" : "check-invoke" , "check" : { "id" : "c" , "version" : "1" } , "config" : [1, 2.5e3, -0, true, false, null, "x\u00e9\n"] , "trace" : {"a":{"b":[[]]}} } `,
	`{"kind":"invoke","tool":{"id":"a"},"tool":{"version":"2"},"input":null,"input":{"second":1}}`,
	`{"KIND":"invoke","Tool":{"ID":"a"}}`,
	`{"kind":"inv\u006Fke"}`,
	`{"kind":"invoké"}`,
	`{"kind":"invoke","tool":null}`,
	`{"kind":5}`,
	`{"kind":"invoke",}`,
	`{"kind":"invoke"} x`,
	`{"input":01}`, `{"input":1.}`, `{"input":1e}`, `{"input":-}`, `{"input":tru}`, `{"input":"\x"}`, `{"input":"a` + "\x01" + `"}`,
	`{"input":"\ud800"}`, `{"input":"` + "\xff" + `"}`, `{"input":{"a" 1}}`, `{"input":[1 2]}`,
	`[]`, `null`, ``, `{`, `{"a":[` + string(make([]byte, 0)) + `]}`,
	fullCtx,
	`{"tenantId":"t\"q","env":{"A":"\u0041"}}`,
	`{"env":null,"secrets":null,"settings":null}`,
	`{"settings":{"a":{"x":1},"a":{"y":2}},"Settings":{"b":[]}}`,
	`{"env":{"A":"1"},"env":{"B":"2"}}`,
	`{"env":{"A":1}}`,
	`{"TenantID":"x"}`,
	`{"tenantId":null}`,
}

func TestFastDecodersAgreeWithEncodingJSON(t *testing.T) {
	for _, c := range decodeCases {
		checkRequestDecode(t, []byte(c))
		checkContextDecode(t, []byte(c))
	}
	// The common request takes the fast path.
	var r request
	if ok, _ := decodeRequest([]byte(decodeCases[0]), &r, false); !ok || r.Tool.ID != "echo.echo" || string(r.Input) != `{"message":"hello"}` {
		t.Fatalf("the common request is not decoded fast: %+v", r)
	}
	var c Context
	if !decodeContext([]byte(fullCtx), &c, false) || c.Env["A"] != "b" || string(c.Secrets["s"]) != `{"k":"v"}` ||
		c.IdempotencyKey != "k" || string(c.Settings["block-1"]) != `{"tone":"dry"}` {
		t.Fatalf("the common ctx is not decoded fast: %+v", c)
	}
}

// checkRequestDecode and checkContextDecode decode b with strings
// copied and with strings sharing b's bytes (as a call in a module does).
func checkRequestDecode(t *testing.T, b []byte) {
	for _, alias := range []bool{false, true} {
		var fast, slow request
		ok, _ := decodeRequest(b, &fast, alias)
		err := json.Unmarshal(b, &slow)
		if ok && (err != nil || !reflect.DeepEqual(fast, slow)) {
			t.Fatalf("request %q (alias %v): fast %+v, encoding/json %+v (%v)", b, alias, fast, slow, err)
		}
	}
}

func checkContextDecode(t *testing.T, b []byte) {
	for _, alias := range []bool{false, true} {
		var fast, slow Context
		ok := decodeContext(b, &fast, alias)
		err := json.Unmarshal(b, &slow)
		if ok && (err != nil || !reflect.DeepEqual(fast, slow)) {
			t.Fatalf("ctx %q (alias %v): fast %+v, encoding/json %+v (%v)", b, alias, fast, slow, err)
		}
	}
}

// TestACallsRequestAllocatesNothing: in a module, the common request and
// its ctx decode without an allocation (each one writes heap pages that a
// pooled instance's reset then copies back), and the strings share the
// request's bytes.
func TestACallsRequestAllocatesNothing(t *testing.T) {
	b := []byte(decodeCases[0])
	var r request
	var c Context
	allocs := testing.AllocsPerRun(100, func() {
		r, c = request{}, Context{}
		if ok, _ := decodeRequest(b, &r, true); !ok || !decodeContext(r.Ctx, &c, true) {
			t.Fatal("the common request is not decoded fast")
		}
	})
	if allocs != 0 {
		t.Fatalf("decoding the common request allocates %v times, want 0", allocs)
	}
	if r.Kind != wire.KindInvoke || r.Tool.ID != "echo.echo" || c.TenantID != "t" || c.RunID != "r" {
		t.Fatalf("decoded %+v, ctx %+v", r, c)
	}
	if i := strings.Index(string(b), `"echo.echo"`) + 1; unsafe.StringData(r.Tool.ID) != &b[i] {
		t.Fatal("the tool id is a copy, not the request's bytes")
	}
}

// TestAppendingToTheInputLeavesTheCtx: a handler that appends to its
// input (a json.RawMessage in the request's buffer) gets a copy; the
// bytes after the input, the ctx whose strings share them, stay as read.
func TestAppendingToTheInputLeavesTheCtx(t *testing.T) {
	b := []byte(`{"kind":"invoke","tool":{"id":"x"},"input":{"a":1},"ctx":{"tenantId":"tenant-a","runId":"r"}}`)
	var r request
	var c Context
	if ok, _ := decodeRequest(b, &r, true); !ok || !decodeContext(r.Ctx, &c, true) {
		t.Fatal("the request is not decoded fast")
	}
	_ = append(r.Input, `,"ctx":{"tenantId":"tenant-b"`...)
	_ = append(r.Ctx, 'x')
	if c.TenantID != "tenant-a" || string(r.Ctx) != `{"tenantId":"tenant-a","runId":"r"}` || cap(r.Input) != len(r.Input) {
		t.Fatalf("after appending to the input: tenant %q, ctx %s", c.TenantID, r.Ctx)
	}
}

// FuzzFastDecoders: whatever the bytes, what the fast decoders accept is
// exactly what encoding/json reads from them.
func FuzzFastDecoders(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkRequestDecode(t, b)
		checkContextDecode(t, b)
	})
}

var marshalCases = []string{
	`{"items":[{"id":1,"name":"item 1","tags":["a","b"],"ok":true,"score":0.25},{"id":2,"n":null,"o":{},"l":[],"f":false,"e":-1.5e-3}]}`,
	`[[[[[[]]]]]]`, `{"a":{"b":{"c":[1,[2,{"d":"e"}]]}}}`, `{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{1:2}`, `[}`, `{]`, `{"a":1]`, `[1}`, `]`, `}`,
	`{"a" : 1}`, "[1,\n2]", `{"a":[1,2],"b":"x"} `, `"abc`, `tru`, `falsee`, `nulll`, `-`, `01`, `1.e5`, `[1 2]`, `{"a":1 "b":2}`,
	`{"message":"hello world"}`, `{"a": 1}`, `[1,2,{"b":null}]`, `"<b>"`, `"a&b"`, "\"\u2028\"", `{"a":"é"}`, ` 1`, `1 `, `{"a":1`, ``, `nul`, `"\u003c"`, `0`,
}

func TestOutputsMarshalledAsIs(t *testing.T) {
	for _, c := range marshalCases {
		checkMarshal(t, []byte(c))
	}
	if !marshalsAsIs([]byte(`{"message":"hello world"}`)) {
		t.Fatal("a compact output is marshalled anew")
	}
}

// checkMarshal: b is taken as is exactly when json.Marshal would return
// it unchanged, and the reader finds it valid exactly when encoding/json
// does (nesting past maxDepth aside).
func checkMarshal(t *testing.T, b []byte) {
	want, err := json.Marshal(json.RawMessage(b))
	asIs := marshalsAsIs(b)
	if asIs && (err != nil || string(want) != string(b)) {
		t.Fatalf("%q is taken as is, but json.Marshal gives %q (%v)", b, want, err)
	}
	if !asIs && err == nil && string(want) == string(b) && !deeperThan(b, maxDepth) {
		t.Fatalf("%q is marshalled anew, but json.Marshal returns it as it is", b)
	}
	var space, escaped bool
	end := scan(b, 0, &space, &escaped)
	for end >= 0 && end < len(b) && strings.ContainsRune(" \t\n\r", rune(b[end])) {
		end++
	}
	if (end == len(b)) != json.Valid(b) && !deeperThan(b, maxDepth) {
		t.Fatalf("%q: the reader says valid %v (ends at %d), encoding/json %v", b, end == len(b), end, json.Valid(b))
	}
}

// deeperThan reports whether b opens more than max brackets at once
// (strings aside, roughly: enough for a test's bounds).
func deeperThan(b []byte, max int) bool {
	depth, in := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == '{' || c == '['):
			if depth++; depth > max {
				return true
			}
		case !in && (c == '}' || c == ']'):
			depth--
		}
	}
	return false
}

// FuzzOutputsMarshalledAsIs: an output taken as is is what json.Marshal
// would have made of it.
func FuzzOutputsMarshalledAsIs(f *testing.F) {
	for _, c := range append(marshalCases, decodeCases...) {
		f.Add([]byte(c))
	}
	f.Fuzz(checkMarshal)
}

// TestLongStringsAreReadEightBytesAStep: a string's first 16 bytes are
// read one at a time, then 8 at a time until one needs a look of its own; each such byte (and a quote, a
// backslash, a control byte, a character json.Marshal escapes, UTF-8) is
// found at every offset, and the answers are encoding/json's.
func TestLongStringsAreReadEightBytesAStep(t *testing.T) {
	for _, special := range []string{`<`, `>`, `&`, "\u2028", "\u2029", "\u2027", `\"`, `\\`, `\n`, `\u00e9`, "\x01", "\x7f", "é", `"`} {
		for at := 0; at < 80; at++ {
			s := `"` + strings.Repeat("a", at) + special + strings.Repeat("b", 80-at) + `"`
			checkMarshal(t, []byte(s))
			checkRequestDecode(t, []byte(`{"kind":"invoke","tool":{"id":"`+strings.Repeat("x", at)+`"},"input":`+s+`}`))
		}
	}
	if long := `{"text":"` + strings.Repeat("plain text ", 1000) + `"}`; !marshalsAsIs([]byte(long)) {
		t.Fatal("a long plain string is marshalled anew")
	}
}

// TestDeepNestingIsLeftToEncodingJSON: past maxDepth the reader gives up
// (encoding/json answers), at maxDepth it reads.
func TestDeepNestingIsLeftToEncodingJSON(t *testing.T) {
	var space, escaped bool
	at := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	if end := scan([]byte(at), 0, &space, &escaped); end != len(at) {
		t.Fatalf("%d nested arrays: the reader ends at %d of %d", maxDepth, end, len(at))
	}
	past := "[" + at + "]"
	if end := scan([]byte(past), 0, &space, &escaped); end != -1 {
		t.Fatalf("%d nested arrays: the reader ends at %d, want it to give up", maxDepth+1, end)
	}
	checkRequestDecode(t, []byte(`{"input":`+past+`}`))
}
