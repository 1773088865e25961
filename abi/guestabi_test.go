package abi

import (
	"encoding/json"
	"testing"

	"github.com/kindgi/packd/abi/guest/wire"

	"github.com/kindgi/packd/internal/ojson"
)

// TestRequestsRoundTrip: the request messages a host writes are what a
// guest reads, key order and all.
func TestRequestsRoundTrip(t *testing.T) {
	input, _ := ojson.Decode([]byte(`{"b":1,"a":[true,null]}`))
	ctx, _ := ojson.Decode([]byte(`{"tenantId":"t","runId":"r"}`))
	b := EncodeInvoke("p.tool", "1.2.0", input, ctx)
	if want := `{"kind":"invoke","tool":{"id":"p.tool","version":"1.2.0"},"input":{"b":1,"a":[true,null]},"ctx":{"tenantId":"t","runId":"r"}}`; string(b) != want {
		t.Fatalf("EncodeInvoke = %s, want %s", b, want)
	}
	var r Request
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Kind != KindInvoke || r.Tool.ID != "p.tool" || r.Tool.Version != "1.2.0" || string(r.Input) != `{"b":1,"a":[true,null]}` || string(r.Ctx) != `{"tenantId":"t","runId":"r"}` {
		t.Fatalf("read back %+v", r)
	}
	if b := EncodeInvoke("p.tool", "", input, ctx); string(b[:40]) != `{"kind":"invoke","tool":{"id":"p.tool"},` {
		t.Fatalf("an unversioned tool: %s", b)
	}

	config, _ := ojson.Decode([]byte(`{"max":3}`))
	b = EncodeCheckInvoke("c", config, []any{})
	r = Request{}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Kind != KindCheckInvoke || r.Check.ID != "c" || string(r.Config) != `{"max":3}` || string(r.Trace) != `[]` {
		t.Fatalf("read back %+v from %s", r, b)
	}
}

// TestThrown: what a guest throws reads back as the error's cause; a guest
// may leave out name and stack, and a response that is not a thrown error
// is shown whole.
func TestThrown(t *testing.T) {
	for body, want := range map[string]Cause{
		string(wire.EncodeThrown(wire.Thrown{Name: "TypeError", Message: "m", Stack: "s"})): {Name: "TypeError", Message: "m", Stack: "s"},
		`{"message":"only"}`:           {Name: "Error", Message: "only"},
		`{"name":"","message":"m"}`:    {Name: "Error", Message: "m"},
		`{"name":"X"}`:                 {Name: "Error", Message: `{"name":"X"}`},
		`not json`:                     {Name: "Error", Message: "not json"},
		`{"message":1,"name":"Typed"}`: {Name: "Error", Message: `{"message":1,"name":"Typed"}`},
	} {
		if got := ReadThrown([]byte(body)); got != want {
			t.Errorf("ReadThrown(%s) = %+v, want %+v", body, got, want)
		}
	}
}

func TestServes(t *testing.T) {
	if !Serves(GuestABIVersion) || Serves(0) || Serves(GuestABIVersion+1) {
		t.Fatal("Serves is not exactly the versions packd speaks")
	}
}

// TestMessagesAreTheOrderedObjects: the messages written field by field
// (without building an ordered object per call) are byte for byte what
// encoding the ordered object gives, escapes included.
func TestMessagesAreTheOrderedObjects(t *testing.T) {
	obj := func(kv ...any) *ojson.Object {
		o := &ojson.Object{}
		for i := 0; i < len(kv); i += 2 {
			o.Keys, o.Vals = append(o.Keys, kv[i].(string)), append(o.Vals, kv[i+1])
		}
		return o
	}
	v, _ := ojson.Decode([]byte(`{"b":"\u2028\"","a":[1.5,null,{"2":0,"1":1}]}`))
	for _, id := range []string{"p.tool", `q"\` + "\u2028\x01é"} {
		cases := map[string][2][]byte{
			"invoke":         {EncodeInvoke(id, "1.0", v, "ctx"), ojson.Encode(obj("kind", KindInvoke, "tool", obj("id", id, "version", "1.0"), "input", v, "ctx", "ctx"))},
			"unversioned":    {EncodeInvoke(id, "", nil, v), ojson.Encode(obj("kind", KindInvoke, "tool", obj("id", id), "input", nil, "ctx", v))},
			"check invoke":   {EncodeCheckInvoke(id, v, []any{}), ojson.Encode(obj("kind", KindCheckInvoke, "check", obj("id", id), "config", v, "trace", []any{}))},
			"result":         {EncodeResult(obj(id, v)), ojson.Encode(obj("v", float64(ProtocolVersion), "kind", "result", "output", obj(id, v)))},
			"check result":   {EncodeCheckResult(v), ojson.Encode(obj("v", float64(ProtocolVersion), "kind", "check-result", "result", v))},
			"a string input": {EncodeInvoke(id, "", id, nil), ojson.Encode(obj("kind", KindInvoke, "tool", obj("id", id), "input", id, "ctx", nil))},
		}
		for name, c := range cases {
			if string(c[0]) != string(c[1]) {
				t.Errorf("%s, id %q:\n got %s\nwant %s", name, id, c[0], c[1])
			}
		}
	}
}
