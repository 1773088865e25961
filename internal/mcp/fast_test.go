package mcp

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/service"
)

// TestTheFastPathAnswersAsTheSDKDoes: every kind of answer to a tools/call
// of MCP 2026-07-28 is the same from the fast path as from the SDK, byte
// for byte, with the same status and headers: a result (with characters
// JSON escapes for HTML), a tool's failure, a refused context, ids of
// each kind, a call the service is too busy for.
func TestTheFastPathAnswersAsTheSDKDoes(t *testing.T) {
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{MaxConcurrency: 1, TenantShareOff: true})
	fast, err := New(Config{Service: svc, Token: testToken, Version: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := New(Config{Service: svc, Token: testToken, Version: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	slow.noFast = true
	call := func(id, name, args, meta string) string {
		if meta == "" {
			meta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":%s}}`, id, name, args, meta)
	}
	ask := func(f *Face, name, body string) (int, http.Header, string) {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", name)
		rec := httptest.NewRecorder()
		f.Handler().ServeHTTP(rec, req)
		b, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, rec.Result().Header, string(b)
	}
	fullMeta := func(extra string) string {
		return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},` + extra + `}`
	}
	cases := []struct{ what, name, body string }{
		{"a result", "conformance.echo", call("1", "conformance.echo", `{"message":"hi"}`, "")},
		{"HTML in a result", "conformance.echo", call("2", "conformance.echo", `{"message":"<b>&amp;</b> \u2028 é"}`, "")},
		{"a string id", "conformance.echo", call(`"req-7"`, "conformance.echo", `{"message":"x"}`, "")},
		{"an id written 3.0", "conformance.echo", call("3.0", "conformance.echo", `{"message":"x"}`, "")},
		{"a bad input", "conformance.echo", call("4", "conformance.echo", `{"message":5,"extra":true}`, "")},
		{"a context", "conformance.echo", call("5", "conformance.echo", `{"message":"x"}`, fullMeta(`"kindgi.com/ctx":{"tenantId":"t1","runId":"r1","secrets":{"k":"v"}}`))},
		{"a context that is not an object", "conformance.echo", call("6", "conformance.echo", `{"message":"x"}`, fullMeta(`"kindgi.com/ctx":[1]`))},
		{"a tenant that is not a string", "conformance.echo", call("7", "conformance.echo", `{"message":"x"}`, fullMeta(`"kindgi.com/ctx":{"tenantId":false}`))},
		{"a deadline", "conformance.sleep", call("8", "conformance.sleep", `{"ms":2000}`, fullMeta(`"kindgi.com/timeoutMs":50`))},
		{"no arguments", "conformance.echo", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"conformance.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"a duplicate key", "conformance.echo", `{"jsonrpc":"2.0","id":10,"id":11,"method":"tools/call","params":{"name":"conformance.echo","arguments":{"message":"a","message":"b"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
	}
	for _, c := range cases {
		fs, fh, fb := ask(fast, c.name, c.body)
		ss, sh, sb := ask(slow, c.name, c.body)
		if fs != ss || fb != sb {
			t.Errorf("%s:\n fast %d %s\n  SDK %d %s", c.what, fs, fb, ss, sb)
		}
		for _, k := range []string{"Content-Type", "Cache-Control", "Retry-After", "Mcp-Session-Id"} {
			if fh.Get(k) != sh.Get(k) {
				t.Errorf("%s: %s fast %q, SDK %q", c.what, k, fh.Get(k), sh.Get(k))
			}
		}
	}

	// A call the service has no slot for: the 503 of each.
	held := make(chan struct{})
	go func() {
		defer close(held)
		ask(slow, "conformance.sleep", call("20", "conformance.sleep", `{"ms":1500}`, ""))
	}()
	for i := 0; svc.InFlight() == 0; i++ {
		if i > 400 {
			t.Fatal("the holding call never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}
	body := call("21", "conformance.echo", `{"message":"x"}`, "")
	fs, fh, fb := ask(fast, "conformance.echo", body)
	ss, sh, sb := ask(slow, "conformance.echo", body)
	if fs != http.StatusServiceUnavailable || fs != ss || fb != sb || fh.Get("Retry-After") != sh.Get("Retry-After") || fh.Get("Retry-After") == "" {
		t.Errorf("busy:\n fast %d %v %s\n  SDK %d %v %s", fs, fh, fb, ss, sh, sb)
	}
	<-held
	// Every one of them took the fast path (else the test compared the SDK
	// with itself), and none through the SDK's face.
	if n := fast.fastServed.Load(); n != int64(len(cases)+1) || slow.fastServed.Load() != 0 {
		t.Errorf("the fast path served %d of %d calls", n, len(cases)+1)
	}
}
