package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox"
)

// TestGoEchoAnswersAsEncodingJSON: the Go SDK finds its input with
// json_scan, and takes an input it says has no white space and nothing
// json.Marshal escapes as its echo's output as it is. Whatever the input,
// the Go echo pack answers what encoding/json makes of it: the input as
// json.Marshal writes it, or, when the request is not valid JSON, the
// error it throws.
func TestGoEchoAnswersAsEncodingJSON(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 1})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "echo", "echo.wasm"))
	inputs := append([]string(nil), sandbox.JSONScanCases...)
	r := rand.New(rand.NewPCG(44, 2))
	for range 300 {
		inputs = append(inputs, string(sandbox.RandomJSON(r, 0)))
	}
	for _, in := range inputs {
		body := []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":` + in + `,"ctx":{"tenantId":"t","runId":"r"}}`)
		rep, err := m.Call(context.Background(), sandbox.Request{Body: body})
		if err != nil {
			t.Fatalf("input %q: %v", in, err)
		}
		var req struct{ Input json.RawMessage }
		if json.Unmarshal(body, &req) != nil {
			if rep.Status != abi.StatusThrown || !bytes.Contains(rep.Body, []byte("guest could not read the request")) {
				t.Fatalf("input %q: %v %s, want the request refused", in, rep.Status, rep.Body)
			}
			continue
		}
		want, err := json.Marshal(req.Input)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Status != abi.StatusOK || !bytes.Equal(rep.Body, want) {
			t.Fatalf("input %q: %v %s, want %s", in, rep.Status, rep.Body, want)
		}
	}
}

// TestGoEchoOf5MiBAnswersAtTheDefaultFuel: a Go echo of 5 MiB of many small
// items answers within the default budget (issue 43: it cost 2.6e9 fuel a
// MiB when the SDK found the input's end itself, and 5 MiB ran out).
func TestGoEchoOf5MiBAnswersAtTheDefaultFuel(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "echo", "echo.wasm"))
	var in bytes.Buffer
	in.WriteString(`{"items":[`)
	for i := 0; in.Len() < 5<<20; i++ {
		if i > 0 {
			in.WriteByte(',')
		}
		in.WriteString(`{"id":1234,"name":"item 1234","tags":["a","b"],"ok":true,"score":0.25}`)
	}
	in.WriteString(`]}`)
	body := []byte(`{"kind":"invoke","tool":{"id":"echo.echo"},"input":` + in.String() + `,"ctx":{"tenantId":"t","runId":"r"}}`)
	rep, err := m.Call(context.Background(), sandbox.Request{Body: body})
	if err != nil || rep.Status != abi.StatusOK || !bytes.Equal(rep.Body, in.Bytes()) {
		t.Fatalf("%v %v, %d bytes back of %d", err, rep.Status, len(rep.Body), in.Len())
	}
	t.Logf("%d bytes: %d fuel (%.1f a byte; the default budget is %d)", in.Len(), rep.FuelUsed, float64(rep.FuelUsed)/float64(in.Len()), sandbox.DefaultFuel)
	if rep.FuelUsed > sandbox.DefaultFuel/10 {
		t.Errorf("%d fuel for a 5 MiB echo", rep.FuelUsed)
	}
}

// TestGoContextDecodesAsEncodingJSON: the Go SDK reads a request's
// envelope and its ctx with json_members (the first 16 members of an
// object in one call, more in a second). Whatever the ctx, a handler sees
// the tenantId and runId encoding/json reads from it.
func TestGoContextDecodesAsEncodingJSON(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{PoolSize: 1})
	m := compile(t, sb, filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm"))
	var env strings.Builder
	for i := range 20 {
		fmt.Fprintf(&env, `"K%d":"v%d",`, i, i)
	}
	ctxs := []string{
		`{"tenantId":"t","runId":"r"}`,
		` { "tenantId" : "t" , "runId" : "r" } `,
		`{"tenantId":"t\"q","runId":"r\u00e9"}`,
		`{"tenantId":"ünï","runId":"<r>&"}`,
		`{"TENANTID":"x","runId":"r"}`,
		`{"tenantId":"t","tenantId":"u","runId":"r"}`,
		`{"env":{` + env.String() + `"A":"b"},"secrets":{"s":{"k":"v"}},"settings":{"b":{"x":1}},"tenantId":"t","runId":"r"}`,
		`{` + env.String() + `"tenantId":"after twenty","runId":"r"}`,
		`{"tenantId":null,"runId":"r"}`,
		`{"requestId":"q","idempotencyKey":"k","projectId":"p","orgId":"o","extra":[1,{"a":2}],"tenantId":"t","runId":"r"}`,
	}
	for _, c := range ctxs {
		body := []byte(`{"kind":"invoke","tool":{"id":"conformance.context","version":"1.0.0"},"input":{},"ctx":` + c + `}`)
		rep, err := m.Call(context.Background(), sandbox.Request{Body: body})
		if err != nil || rep.Status != abi.StatusOK {
			t.Fatalf("ctx %s: %v %v %s", c, err, rep.Status, rep.Body)
		}
		var want, got struct {
			TenantID string `json:"tenantId"`
			RunID    string `json:"runId"`
		}
		if err := json.Unmarshal([]byte(c), &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(rep.Body, &got); err != nil || got != want {
			t.Fatalf("ctx %s: the handler saw %s, want %+v", c, rep.Body, want)
		}
	}
}
