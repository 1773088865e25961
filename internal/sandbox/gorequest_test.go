package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/abi/guest"
	"github.com/kindgi/packd/abi/guest/wire"
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
