package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/abi/guest"
	"github.com/kindgi/packd/abi/guest/wire"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/sandbox"
)

// TestGoHandlersAreGivenWhatEncodingJSONReads: the Go SDK reads a call's
// request from where packd says its fields lie (request_fields), or, when
// packd cannot say, itself. Either way a Go handler is given what
// encoding/json reads from the request: goctx answers with what it was
// given, for requests of every shape request_fields knows and of many it
// leaves to the guest.
func TestGoHandlersAreGivenWhatEncodingJSONReads(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 1})
	m := compile(t, sb, filepath.Join("..", "..", "testdata", "goctx", "goctx.wasm"))
	r := rand.New(rand.NewPCG(5, 1))
	found := 0
	for i := range 600 {
		var body []byte
		if i < 30 {
			body = sandbox.RequestFieldCase(i)
		} else {
			body = sandbox.RandomRequest(r)
		}
		if body == nil {
			break
		}
		if sandbox.RequestFieldsOf(body) != nil {
			found++
		}
		rep, err := m.Call(context.Background(), sandbox.Request{Body: body})
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		status, want := goctxAnswer(body)
		if rep.Status != status || status == abi.StatusOK && !bytes.Equal(rep.Body, want) ||
			status == abi.StatusThrown && !bytes.Contains(rep.Body, want) {
			t.Fatalf("%s: answered %v %s, want %v %s", body, rep.Status, rep.Body, status, want)
		}
	}
	if found < 100 {
		t.Fatalf("only %d requests had their fields found: the test reaches too little", found)
	}
}

// goctxAnswer is what goctx answers to the request body, by encoding/json
// (the body of a thrown error: a part of its message).
func goctxAnswer(body []byte) (wire.Status, []byte) {
	var r wire.Request
	if err := json.Unmarshal(body, &r); err != nil {
		return abi.StatusThrown, []byte("guest could not read the request")
	}
	var out any
	switch r.Kind {
	case wire.KindInvoke:
		c := guest.Context{Raw: r.Ctx}
		if err := json.Unmarshal(r.Ctx, &c); err != nil {
			return abi.StatusThrown, []byte("guest could not read ctx")
		}
		out = map[string]any{"id": r.Tool.ID, "input": r.Input, "ctx": &c, "raw": c.Raw}
	case wire.KindCheckInvoke:
		if r.Check.ID != "goctx.check" {
			return abi.StatusNoHandler, nil
		}
		out = map[string]any{"passed": true, "config": r.Config, "trace": r.Trace}
	default:
		return abi.StatusThrown, []byte("unknown request kind")
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	return abi.StatusOK, b
}

// TestRequestFieldsWritesWhatItFound: a guest asking request_fields for
// room for 2^32-1 fields (requestfieldscap.wat) is written the 17 packd
// knows, and nothing past them.
func TestRequestFieldsWritesWhatItFound(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 1})
	m := compile(t, sb, hostile("requestfieldscap"))
	req := sandbox.RequestFieldCase(2)
	rep, err := m.Call(context.Background(), sandbox.Request{Body: req})
	if err != nil || rep.Status != abi.StatusOK {
		t.Fatal(rep, err)
	}
	if want := sandbox.RequestFieldsOf(req); want == nil || !bytes.Equal(rep.Body, want) {
		t.Fatalf("written %x, want %x", rep.Body, want)
	}
}

// TestFieldsTheHostFoundAreWhatTheGuestIsGiven: a call whose request
// comes with where its fields lie (sandbox.InvokeRequest, found by the
// host as it made the request) is answered as one whose request_fields reads the
// request: the same answer for the same fuel, from goctx and from a guest
// that writes back what request_fields wrote (requestfieldscap.wat).
func TestFieldsTheHostFoundAreWhatTheGuestIsGiven(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 1})
	goctx := compile(t, sb, filepath.Join("..", "..", "testdata", "goctx", "goctx.wasm"))
	written := compile(t, sb, hostile("requestfieldscap"))
	decode := func(s string) any {
		v, err := ojson.Decode([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ctxs := []string{
		`{"tenantId":"t","runId":"r"}`,
		`{"tenantId":"t","runId":"r","projectId":"p","orgId":"o","requestId":"q","idempotencyKey":"k","env":{"A":"é\n"},"secrets":{"s":"<v>"},"settings":{"b":[1,2.5,null]},"more":{"Kind":1}}`,
	}
	inputs := []string{`{"message":"hello"}`, `"<&>"`, `[1,{"a":"\u2028"},[]]`, `null`, `{"a":"` + strings.Repeat("x", 70000) + `"}`}
	for _, c := range ctxs {
		for _, in := range inputs {
			input, ctx := decode(in), decode(c)
			body, marks := abi.EncodeInvokeMarked("goctx.echo", "1.0.0", input, ctx)
			withFields := sandbox.InvokeRequest(body, marks, input, ctx)
			if !sandbox.HasFields(withFields) {
				t.Fatalf("%.200s: the host did not say where its fields lie", body)
			}
			for _, m := range []*sandbox.Module{goctx, written} {
				read, err := m.Call(context.Background(), sandbox.Request{Body: body})
				if err != nil {
					t.Fatal(err)
				}
				given, err := m.Call(context.Background(), withFields)
				if err != nil {
					t.Fatal(err)
				}
				if given.Status != read.Status || !bytes.Equal(given.Body, read.Body) || given.FuelUsed != read.FuelUsed {
					t.Fatalf("%.200s: given its fields, answered %v %.200s for %d fuel; reading them, %v %.200s for %d",
						body, given.Status, given.Body, given.FuelUsed, read.Status, read.Body, read.FuelUsed)
				}
			}
		}
	}
}
