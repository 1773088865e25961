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
