package sandbox

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/abi/guest/wire"
	"github.com/kindgi/packd/internal/ojson"
)

// requestFieldCases are requests whose fields request_fields must find
// as encoding/json reads them (found), or must leave to the guest.
var requestFieldCases = []struct {
	request string
	found   bool
}{
	{`{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`, true},
	{` { "kind" : "check-invoke" , "check" : { "id" : "c" , "version" : "1" } , "config" : [1, "<"] , "trace" : {"a":{"b":[[]]}} } `, true},
	{`{"kind":"invoke","tool":{"id":"a","version":"2","other":{}},"input":null,"ctx":{"tenantId":"t","runId":"r","projectId":"p","orgId":"o","requestId":"q","idempotencyKey":"k","env":{"A":"b"},"secrets":{"s":{"k":"v"}},"settings":null,"extra":[1]}}`, true},
	{`{}`, true},
	{`{"kind":"invoke","tool":{},"ctx":{}}`, true},
	{`{"kind":"invoke","input":{"a":"x y"},"unknown":{"kind":1}}`, true},
	{`{"kind":"","tool":{"id":""}}`, true},
	{`{"kind":"invoke","tool":{"id":"a"},"tool":{"version":"2"}}`, false}, // twice
	{`{"kind":"invoke","ctx":{"runId":"a","runId":"b"}}`, false},
	{`{"KIND":"invoke"}`, false}, // a field's name but for case
	{`{"kind":"invoke","Tool":{"id":"a"}}`, false},
	{`{"kind":"invoke","tool":{"ID":"a"}}`, false},
	{`{"kind":"invoke","ctx":{"TenantId":"a"}}`, false},
	{`{"kind":"invoke","check":{"Id":"a"}}`, false},
	{`{"kind":"invoke","check":{"Version":"a"}}`, true}, // a check has no version
	{`{"kind":"inv\u006Fke"}`, false},                   // not plain
	{`{"kind":"invoké"}`, false},
	{`{"ki\u006ed":"invoke"}`, false},
	{`{"kind":5}`, false},
	{`{"kind":null}`, false},
	{`{"kind":"invoke","tool":null}`, false}, // not an object
	{`{"kind":"invoke","tool":"a"}`, false},
	{`{"kind":"invoke","ctx":[]}`, false},
	{`{"kind":"invoke","ctx":{"tenantId":7}}`, false},
	{`{"kind":"invoke","ctx":{"env":7,"secrets":"x","settings":[]}}`, true}, // the guest reads these
	{`{"kind":"invoke",}`, false},
	{`{"kind":"invoke"} x`, false},
	{`{"kind":"invoke"`, false},
	{`[]`, false},
	{``, false},
}

func TestRequestFieldsAreWhatEncodingJSONReads(t *testing.T) {
	for _, c := range requestFieldCases {
		if found := checkFields(t, []byte(c.request)); found != c.found {
			t.Errorf("%s: found %v, want %v", c.request, found, c.found)
		}
	}
	r := rand.New(rand.NewPCG(7, 43))
	found := 0
	for range 3000 {
		if checkFields(t, randomRequest(r)) {
			found++
		}
	}
	if found < 300 {
		t.Fatalf("only %d of 3000 random requests had their fields found: the test reaches too little", found)
	}
}

// TestRequestsPackdMakesHaveTheirFieldsFound: every request packd makes
// (abi.EncodeInvoke, abi.EncodeCheckInvoke) is one a Go guest reads from
// its fields, whatever the caller's ctx holds but for keys and strings
// that are not plain.
func TestRequestsPackdMakesHaveTheirFieldsFound(t *testing.T) {
	ctxs := []string{
		`{"tenantId":"t","runId":"r"}`,
		`{"tenantId":"t","runId":"r","projectId":"p","orgId":"o","requestId":"q","idempotencyKey":"k","env":{"A":"é\n"},"secrets":{"s":"<v>"},"settings":{"b":{"x":[1,2]}},"more":{"Kind":1}}`,
		`{ "tenantId" : "t" , "runId" : "r" , "env" : null }`,
	}
	for _, c := range ctxs {
		ctx, err := ojson.Decode([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		input, err := ojson.Decode([]byte(`{"a":"<&>","b":[1,{"c":null}]}`))
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range [][]byte{
			abi.EncodeInvoke("pack.tool", "", input, ctx),
			abi.EncodeInvoke("pack.tool", "1.0.0", "x", ctx),
			abi.EncodeCheckInvoke("pack.check", input, []any{ctx}),
		} {
			if !checkFields(t, req) {
				t.Errorf("%s: fields not found", req)
			}
		}
	}
}

func FuzzRequestFields(f *testing.F) {
	for _, c := range requestFieldCases {
		f.Add([]byte(c.request))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFields(t, b) })
}

// checkFields finds the fields of the request b, and, when it does,
// checks that each is what encoding/json reads from b.
func checkFields(t *testing.T, b []byte) (found bool) {
	t.Helper()
	var f fieldSpans
	if !findFields(b, func(int) {}, &f) {
		return false
	}
	var r wire.Request
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: fields found in what encoding/json refuses: %v", b, err)
	}
	var c struct {
		TenantID       string          `json:"tenantId"`
		RunID          string          `json:"runId"`
		ProjectID      string          `json:"projectId"`
		OrgID          string          `json:"orgId"`
		RequestID      string          `json:"requestId"`
		IdempotencyKey string          `json:"idempotencyKey"`
		Env            json.RawMessage `json:"env"`
		Secrets        json.RawMessage `json:"secrets"`
		Settings       json.RawMessage `json:"settings"`
	}
	if r.Ctx != nil {
		if err := json.Unmarshal(r.Ctx, &c); err != nil {
			t.Fatalf("%s: fields found in a ctx encoding/json refuses: %v", b, err)
		}
	}
	want := [wire.FieldCount]any{r.Kind, r.Tool.ID, r.Tool.Version, r.Check.ID, r.Input, r.Ctx, r.Config, r.Trace,
		c.TenantID, c.RunID, c.ProjectID, c.OrgID, c.RequestID, c.IdempotencyKey, c.Env, c.Secrets, c.Settings}
	for i, w := range want {
		start, n, flags := f[i][0], f[i][1], f[i][2]
		if uint64(start)+uint64(n) > uint64(len(b)) {
			t.Fatalf("%s: %s at [%d, +%d) is outside the request", b, wire.RequestFields[i], start, n)
		}
		got := b[start : start+n]
		switch w := w.(type) {
		case string:
			if string(got) != w {
				t.Fatalf("%s: %s is %q, encoding/json reads %q", b, wire.RequestFields[i], got, w)
			}
		case json.RawMessage:
			if n == 0 && w != nil || n != 0 && !bytes.Equal(got, w) {
				t.Fatalf("%s: %s is %q, encoding/json reads %q", b, wire.RequestFields[i], got, w)
			}
			if n == 0 {
				continue
			}
			// Bits 2 and 3 are clear exactly when json.Marshal sends it as it is.
			m, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			if asIs := flags&(memberValueSpace|memberValueEscaped) == 0; asIs != bytes.Equal(m, w) {
				t.Fatalf("%s: %s has flags %b, but json.Marshal makes %s of it", b, wire.RequestFields[i], flags, m)
			}
		}
		if n == 0 && start|flags != 0 && wire.StringFields&(1<<i) == 0 {
			t.Fatalf("%s: %s is absent but written as %v", b, wire.RequestFields[i], f[i])
		}
	}
	return true
}

// randomRequest is a request message, often one whose fields are found,
// often not: keys twice or in another case, strings not plain, values of
// other types, white space.
func randomRequest(r *rand.Rand) []byte {
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	ws := func() string { return pick("", "", "", "", " ", "\n\t") }
	key := func(k string) string {
		switch r.IntN(40) {
		case 0:
			return strings.ToUpper(k[:1]) + k[1:]
		case 1:
			return `\u00` + hex2(k[0]) + k[1:]
		}
		return k
	}
	str := func() string {
		return pick(`"a"`, `"tenant-1"`, `""`, `"x y"`, `"<b>"`, `"t\"q"`, `"\u0041"`, `"é"`, `null`, `5`, `{}`, `"run"`)
	}
	obj := func(keys []string, value func(k string) string) string {
		var b strings.Builder
		b.WriteString("{" + ws())
		for i := range r.IntN(len(keys) + 1) {
			if i > 0 {
				b.WriteString(ws() + "," + ws())
			}
			k := keys[r.IntN(len(keys))]
			b.WriteString(`"` + key(k) + `"` + ws() + ":" + ws() + value(k))
		}
		b.WriteString(ws() + "}")
		return b.String()
	}
	anyJSON := func(string) string { return string(randomJSON(r, 2)) }
	strOrJSON := func(string) string {
		if r.IntN(3) == 0 {
			return anyJSON("")
		}
		return str()
	}
	ctx := func() string {
		return obj([]string{"tenantId", "runId", "projectId", "orgId", "requestId", "idempotencyKey", "env", "secrets", "settings", "extra"}, func(k string) string {
			switch k {
			case "env":
				return pick(obj([]string{"A", "B"}, func(string) string { return str() }), "null", "7")
			case "secrets", "settings":
				return pick(obj([]string{"s", "t"}, anyJSON), "null")
			case "extra":
				return anyJSON(k)
			}
			if r.IntN(8) == 0 {
				return str()
			}
			return pick(`"t"`, `"run-1"`, `""`, `"a b"`)
		})
	}
	idObject := func() string {
		if r.IntN(10) == 0 {
			return str()
		}
		return obj([]string{"id", "version", "other"}, func(string) string {
			if r.IntN(6) == 0 {
				return str()
			}
			return pick(`"echo.echo"`, `"1.0.0"`, `"goctx.check"`)
		})
	}
	return []byte(obj([]string{"kind", "tool", "check", "input", "ctx", "config", "trace", "ctx", "tool", "input", "more"}, func(k string) string {
		switch k {
		case "kind":
			if r.IntN(6) == 0 {
				return str()
			}
			return pick(`"invoke"`, `"check-invoke"`)
		case "tool", "check":
			return idObject()
		case "ctx":
			if r.IntN(10) == 0 {
				return anyJSON(k)
			}
			return ctx()
		}
		return strOrJSON(k)
	}))
}

func hex2(c byte) string { return string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15]) }

// checkInvokeFields makes the invoke message of toolID, version, input
// and ctx, and checks that where invokeFields says its fields lie is
// where findFields finds them, and that the message is the one JSON
// object ojson writes of its parts. It reports whether invokeFields said.
func checkInvokeFields(t *testing.T, toolID, version string, input, ctx any) (said bool) {
	t.Helper()
	body, m := abi.EncodeInvokeMarked(toolID, version, input, ctx)
	tool := &ojson.Object{}
	tool.Set("id", toolID)
	if version != "" {
		tool.Set("version", version)
	}
	want := ojson.Encode(&ojson.Object{Keys: []string{"kind", "tool", "input", "ctx"}, Vals: []any{abi.KindInvoke, tool, input, ctx}})
	if !bytes.Equal(body, want) {
		t.Fatalf("the invoke message is %s, want %s", body, want)
	}
	fields := invokeFields(body, m, input, ctx)
	var found fieldSpans
	paid := 0
	ok := findFields(body, func(n int) { paid += n }, &found)
	switch {
	case fields == nil:
		return false
	case !ok:
		t.Fatalf("%s: invokeFields says %v, but request_fields reading it answers -1", body, *fields)
	case *fields != found:
		t.Fatalf("%s: invokeFields says\n%v\nrequest_fields reading it finds\n%v", body, *fields, found)
	case paid != len(body):
		t.Fatalf("%s: request_fields reading it paid for %d bytes, the call given its fields pays for %d", body, paid, len(body))
	}
	return true
}

// randomInvoke is the parts of a random invoke message: tool ids and
// versions plain and not, an input of any JSON, a ctx with the fields'
// keys, others, keys in another case or not plain, and strings not plain.
func randomInvoke(t *testing.T, r *rand.Rand) (toolID, version string, input, ctx any) {
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	toolID = pick("echo.echo", "", "pack.tool", "<x>&", "echo.echo", "pack.tool")
	if r.IntN(8) == 0 {
		toolID = pick(`a"b`, "é", "a\u2028", "a\\b", "t\n")
	}
	version = pick("", "", "1.0.0", "<1>", "1.0.0")
	if r.IntN(8) == 0 {
		version = pick("é", `"`)
	}
	input, err := ojson.Decode(randomJSON(r, 0))
	if err != nil {
		t.Fatal(err) // randomJSON writes valid JSON
	}
	o := &ojson.Object{}
	for range r.IntN(12) {
		k := pick("tenantId", "runId", "projectId", "orgId", "requestId", "idempotencyKey", "env", "secrets", "settings", "extra", "")
		if r.IntN(30) == 0 {
			k = pick("TenantId", "RUNID", "ké", `a"b`, "a\\b")
		}
		var v any
		switch i, _ := ctxObject.Lookup([]byte(k)); {
		case i >= 0 && wire.StringFields&(1<<ctxObject.Field[i]) != 0 && r.IntN(10) > 0:
			v = pick("t", "", "run-1", "<b>", "a&b", "t", "run-2")
			if r.IntN(10) == 0 {
				v = pick("é", "x\u2028", `q"`, "a\tb")
			}
		default:
			if v, err = ojson.Decode(randomJSON(r, 0)); err != nil {
				t.Fatal(err)
			}
		}
		o.Set(k, v)
	}
	ctx = o
	switch r.IntN(20) {
	case 0:
		ctx = nil
	case 1:
		ctx = []any{o}
	case 2: // a key twice, as only a made object holds it
		o.Keys, o.Vals = append(o.Keys, "runId", "runId"), append(o.Vals, "a", "b")
	case 3:
		input = []any{json.RawMessage(` { } `)}
	case 4:
		input = []string{"a", "<b>"}
	}
	return toolID, version, input, ctx
}

func TestInvokeFieldsAreWhatRequestFieldsFinds(t *testing.T) {
	said := 0
	r := rand.New(rand.NewPCG(11, 43))
	for range 5000 {
		if id, v, in, ctx := randomInvoke(t, r); checkInvokeFields(t, id, v, in, ctx) {
			said++
		}
	}
	if said < 1000 {
		t.Fatalf("InvokeFields said where the fields lie for only %d of 5000 random messages: the test reaches too little", said)
	}
	// The ctx packd sends, and what is at the edges of what it says.
	nest := func(n int) any {
		var v any = "x"
		for range n {
			v = []any{v}
		}
		return v
	}
	ctx, err := ojson.Decode([]byte(`{"tenantId":"t","runId":"r","env":{"A":"<b>"},"secrets":{"s":"v"},"settings":null}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		input, ctx any
		said       bool
	}{
		{"hello", ctx, true},
		{nest(maxJSONDepth), ctx, true},
		{nest(maxJSONDepth + 1), ctx, false},
		{"x", &ojson.Object{Keys: []string{"settings"}, Vals: []any{nest(maxJSONDepth - 1)}}, true},
		{"x", &ojson.Object{Keys: []string{"settings"}, Vals: []any{nest(maxJSONDepth)}}, false},
		{"x", &ojson.Object{Keys: make([]string, abi.MaxMarkedCtx+1), Vals: make([]any, abi.MaxMarkedCtx+1)}, false},
	} {
		if said := checkInvokeFields(t, "echo.echo", "1.0.0", c.input, c.ctx); said != c.said {
			t.Errorf("input %.40v, ctx %.60v: said %v, want %v", c.input, c.ctx, said, c.said)
		}
	}
}

func FuzzInvokeFields(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		id, v, in, ctx := randomInvoke(t, rand.New(rand.NewPCG(a, b)))
		checkInvokeFields(t, id, v, in, ctx)
	})
}

// TestEscapedFlagFindsWhatJSONMarshalEscapesAnywhere: each byte json.Marshal
// escapes (and U+2028, U+2029, and what only starts them), at each place
// of a value, eight bytes at a time and the rest.
func TestEscapedFlagFindsWhatJSONMarshalEscapesAnywhere(t *testing.T) {
	for _, c := range []struct {
		s       string
		escaped bool
	}{{"<", true}, {">", true}, {"&", true}, {"\u2028", true}, {"\u2029", true},
		{"\xe2\x80", false}, {"\xe2\x80\xa7", false}, {"\u2027", false}, {"é", false}, {"=", false}, {"\"", false}} {
		for n := 0; n <= 20; n++ {
			for at := 0; at <= n; at++ {
				v := []byte(strings.Repeat("a", at) + c.s + strings.Repeat("b", n-at))
				if got := escapedFlag(v) != 0; got != c.escaped {
					t.Fatalf("%q: escaped %v, want %v", v, got, c.escaped)
				}
			}
		}
	}
}
