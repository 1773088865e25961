package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
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
