package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

// conformanceTools are the conformance pack's echo, sleep and throws, and
// echo again as an internal tool (conformance.echo's module serves it by
// that id: the index names it internal).
const conformanceTools = `[
 {"id":"conformance.echo","version":"1.0.0","description":"Echoes its message.","input":{"type":"object","properties":{"message":{"type":"string","minLength":1}},"required":["message"],"additionalProperties":false},"output":{"type":"object"},"modulePath":"conformance.wasm","mutating":false},
 {"id":"conformance.sleep","version":"1.0.0","input":{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]},"output":{"type":"object"},"modulePath":"conformance.wasm","effects":[{"kind":"deletes"}],"network":{"kind":"allowlist","hosts":["example.com"]}},
 {"id":"conformance.throws","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"conformance.wasm","visibility":"internal"}
]`

// events records the service's call events.
type events struct {
	mu   sync.Mutex
	list []service.Event
}

func (e *events) OnCall(ev service.Event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

func (e *events) waitFor(t *testing.T, outcome string) service.Event {
	t.Helper()
	for range 200 {
		e.mu.Lock()
		for _, ev := range e.list {
			if ev.Outcome == outcome {
				e.mu.Unlock()
				return ev
			}
		}
		e.mu.Unlock()
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("no call ended %q: %+v", outcome, e.list)
	return service.Event{}
}

func TestInternalToolsAreNeitherListedNorCalled(t *testing.T) {
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{})
	_, url := serve(t, svc, Config{})
	cs := connect(t, url, testToken)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "conformance.echo,conformance.sleep" {
		t.Fatalf("listed %v", names)
	}
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "conformance.throws", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("an internal tool over MCP: %v", err)
	}
	// Its annotations say what the index says.
	a := list.Tools[0].Annotations
	if !a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
		t.Errorf("echo's annotations %+v", a)
	}
	a = list.Tools[1].Annotations
	if a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
		t.Errorf("sleep's annotations %+v", a)
	}
	if list.Tools[0].Description != "Echoes its message." {
		t.Errorf("description %q", list.Tools[0].Description)
	}
}

func TestADeadlineEndsACallAsTheToolsFailure(t *testing.T) {
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{})
	_, url := serve(t, svc, Config{})
	cs := connect(t, url, testToken)
	r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "conformance.sleep", Arguments: map[string]any{"ms": 5000},
		Meta: sdk.Meta{metaTimeoutMs: 200}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(text(r), "did not finish within its time limit") {
		t.Fatalf("%+v %s", r, text(r))
	}
}

func TestAClientAbortCancelsTheCall(t *testing.T) {
	ev := &events{}
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{Hooks: []service.Hook{ev}})
	_, url := serve(t, svc, Config{})
	cs := connect(t, url, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begun := time.Now()
	_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "conformance.sleep", Arguments: map[string]any{"ms": 20000}})
	if err == nil {
		t.Fatal("the call answered")
	}
	e := ev.waitFor(t, "cancelled")
	if d := time.Since(begun); d > 10*time.Second || e.Face != "mcp" {
		t.Fatalf("cancelled after %v, face %q", d, e.Face)
	}
}

// send posts a raw JSON-RPC body to /mcp with exactly the header given,
// and Content-Type and Accept as MCP asks (a "Host" in it is the
// request's Host).
func send(t *testing.T, url, body string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(b)
}

// post sends with the token too, unless the header names its own.
func post(t *testing.T, url, body string, header http.Header) (*http.Response, string) {
	t.Helper()
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Authorization") == "" {
		h.Set("Authorization", "Bearer "+testToken)
	}
	return send(t, url, body, h)
}

func callBody(id int, name, args, meta string) string {
	if meta == "" {
		meta = "{}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":%s}}`, id, name, args, meta)
}

func TestAFullServiceAnswers503WithRetryAfter(t *testing.T) {
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{MaxConcurrency: 1, TenantShareOff: true})
	_, url := serve(t, svc, Config{})
	held := make(chan struct{})
	go func() {
		defer close(held)
		post(t, url, callBody(1, "conformance.sleep", `{"ms":1500}`, ""), nil)
	}()
	for i := 0; svc.InFlight() == 0; i++ {
		if i > 400 {
			t.Fatal("the first call never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, body := post(t, url, callBody(2, "conformance.echo", `{"message":"x"}`, ""), nil)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" ||
		!strings.Contains(body, `"code":-32000`) || !strings.Contains(body, `"id":2`) || !strings.Contains(body, "did not run") {
		t.Fatalf("%d %q %s", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	<-held
	if res, body := post(t, url, callBody(3, "conformance.echo", `{"message":"x"}`, ""), nil); res.StatusCode != http.StatusOK || !strings.Contains(body, `"structuredContent":{"message":"x"}`) {
		t.Fatalf("after: %d %s", res.StatusCode, body)
	}
}

func TestTheTenantIsCheckedBeforeTheGate(t *testing.T) {
	ev := &events{}
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{TenantID: "acme", Hooks: []service.Hook{ev}})
	_, url := serve(t, svc, Config{})
	for _, c := range []struct {
		meta   string
		header http.Header
		want   string
	}{
		{`{"kindgi.com/ctx":{"tenantId":7}}`, nil, "tenantId must be a string"},
		{`{"kindgi.com/ctx":"acme"}`, nil, "must be an object"},
		{`{"kindgi.com/ctx":{"tenantId":null}}`, nil, "tenantId must be a string"},
		{`{}`, nil, "pinned to a tenant: name it"},
		{`{"kindgi.com/ctx":{"tenantId":"other"}}`, nil, "pinned to another tenant"},
		{`{}`, http.Header{"Kindgi-Tenant-Id": {"acme", "acme"}}, "send it once"},
		{`{"kindgi.com/ctx":{"tenantId":"other"}}`, http.Header{"Kindgi-Tenant-Id": {"acme"}}, "name different tenants"},
	} {
		res, body := post(t, url, callBody(1, "conformance.echo", `{"message":"x"}`, c.meta), c.header)
		if !strings.Contains(body, c.want) || !strings.Contains(body, `"code":-32602`) {
			t.Errorf("%s %v: %d %s", c.meta, c.header, res.StatusCode, body)
		}
	}
	for _, c := range []struct {
		meta   string
		header http.Header
	}{
		{`{"kindgi.com/ctx":{"tenantId":"acme"}}`, nil},
		{`{}`, http.Header{"Kindgi-Tenant-Id": {"acme"}}},
	} {
		if res, body := post(t, url, callBody(1, "conformance.echo", `{"message":"x"}`, c.meta), c.header); res.StatusCode != 200 || strings.Contains(body, "error") || strings.Contains(body, "isError") {
			t.Errorf("%s %v: %d %s", c.meta, c.header, res.StatusCode, body)
		}
	}
	e := ev.waitFor(t, "ok")
	if e.TenantID != "acme" || e.Face != "mcp" {
		t.Errorf("event %+v", e)
	}
}

func TestNoAuthAnswersOnlyLoopbackHostsAndOrigins(t *testing.T) {
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{})
	_, url := serve(t, svc, Config{NoAuth: true})
	port := url[strings.LastIndex(url, ":")+1:]
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, c := range []struct {
		header http.Header
		status int
	}{
		{nil, 200},
		{http.Header{"Origin": {"http://localhost:3000"}}, 200},
		{http.Header{"Origin": {"http://127.0.0.1:" + port}}, 200},
		{http.Header{"Host": {"localhost:" + port}}, 200},
		{http.Header{"Host": {"evil.example:" + port}}, http.StatusForbidden},
		{http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
		{http.Header{"Origin": {"null"}}, http.StatusForbidden},
		{http.Header{"Origin": {"http://localhost.evil.example"}}, http.StatusForbidden},
	} {
		if res, body := send(t, url, ping, c.header); res.StatusCode != c.status {
			t.Errorf("%v: %d %s", c.header, res.StatusCode, body)
		}
	}
}

func TestAnswersReadAsAModelNeedsThem(t *testing.T) {
	svc := newService(t, "conformance", service.Config{})
	_, url := serve(t, svc, Config{})
	_, body := post(t, url, callBody(1, "conformance.bad-output", `{}`, ""), nil)
	var res struct {
		Result sdk.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil || !res.Result.IsError || !strings.Contains(text(&res.Result), "output its own schema does not allow") {
		t.Errorf("bad output: %s", body)
	}
	_, body = post(t, url, callBody(2, "conformance.echo", `{"message":"","extra":1}`, ""), nil)
	if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "must NOT have fewer than 1 characters") || !strings.Contains(body, "must NOT have additional properties") {
		t.Errorf("bad input: %s", body)
	}
	_, body = post(t, url, callBody(3, "conformance.echo", `"not an object"`, ""), nil)
	if !strings.Contains(body, `"error"`) && !strings.Contains(body, `"isError":true`) {
		t.Errorf("arguments not an object: %s", body)
	}
	// An unknown method, before MCP 2026-07-28: the SDK's 400.
	hr, body := post(t, url, `{"jsonrpc":"2.0","id":4,"method":"no/such"}`, nil)
	if hr.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"no/such" unsupported`) {
		t.Errorf("unknown method: %d %s", hr.StatusCode, body)
	}
}

// initialize opens a session as a client of MCP 2025-11-25 does, and says
// it is initialized; it returns the session's id.
func initialize(t *testing.T, url string) (string, int) {
	t.Helper()
	return initializeAt(t, url, "2025-11-25")
}

// initializeAt opens a session at a revision.
func initializeAt(t *testing.T, url, version string) (string, int) {
	t.Helper()
	res, body := post(t, url, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	sid := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 {
		return "", res.StatusCode
	}
	if sid == "" || !strings.Contains(body, `"protocolVersion":"`+version+`"`) {
		t.Fatalf("initialize: %d %s", res.StatusCode, body)
	}
	h := http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {version}}
	if res, body := post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h); res.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", res.StatusCode, body)
	}
	return sid, 200
}

// An older client (MCP 2025-11-25) works in a session: its
// notifications/cancelled ends the call it names, as the TypeScript SDK's
// client sends it when its caller aborts.
func TestNotificationsCancelledEndsTheCallInASession(t *testing.T) {
	ev := &events{}
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{Hooks: []service.Hook{ev}})
	_, url := serve(t, svc, Config{})
	sid, _ := initialize(t, url)
	h := http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"}}
	answered := make(chan string, 1)
	go func() {
		_, body := post(t, url, callBody(7, "conformance.sleep", `{"ms":20000}`, ""), h)
		answered <- body
	}()
	for i := 0; svc.InFlight() == 0; i++ {
		if i > 400 {
			t.Fatal("the call never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}
	begun := time.Now()
	if res, body := post(t, url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user stopped it"}}`, h); res.StatusCode != http.StatusAccepted {
		t.Fatalf("cancelled: %d %s", res.StatusCode, body)
	}
	ev.waitFor(t, "cancelled")
	if d := time.Since(begun); d > 10*time.Second {
		t.Fatalf("the call ran on %v after it was cancelled", d)
	}
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call's POST never ended")
	}
	// Another session's id cancels nothing of this one's: a session is
	// its own.
	other, _ := initialize(t, url)
	if other == sid {
		t.Fatal("two sessions share an id")
	}
}

// A client of MCP 2025-06-18 opens a session and calls in it.
func TestA2025_06_18ClientWorks(t *testing.T) {
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{})
	_, url := serve(t, svc, Config{})
	sid, _ := initializeAt(t, url, "2025-06-18")
	h := http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-06-18"}}
	if res, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, h); res.StatusCode != 200 || !strings.Contains(body, `"name":"conformance.echo"`) {
		t.Fatalf("tools/list: %d %s", res.StatusCode, body)
	}
	if res, body := post(t, url, callBody(2, "conformance.echo", `{"message":"2025"}`, ""), h); res.StatusCode != 200 || !strings.Contains(body, `"structuredContent":{"message":"2025"}`) {
		t.Fatalf("tools/call: %d %s", res.StatusCode, body)
	}
	// Its session ends when it says so.
	req, _ := http.NewRequest("DELETE", url, nil)
	req.Header = h.Clone()
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res, _ := post(t, url, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, h); res.StatusCode != http.StatusNotFound {
		t.Errorf("a call in an ended session: %d", res.StatusCode)
	}
}

func TestSessionsAreBounded(t *testing.T) {
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{})
	_, url := serve(t, svc, Config{MaxSessions: 2})
	for i := range 2 {
		if _, status := initialize(t, url); status != 200 {
			t.Fatalf("session %d: %d", i, status)
		}
	}
	res, body := post(t, url, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !strings.Contains(body, "2 sessions are open") {
		t.Fatalf("a third session: %d %s", res.StatusCode, body)
	}
	// Calls outside sessions are still served.
	if res, body := post(t, url, callBody(1, "conformance.echo", `{"message":"x"}`, ""), nil); res.StatusCode != 200 || !strings.Contains(body, `"structuredContent"`) {
		t.Fatalf("a call: %d %s", res.StatusCode, body)
	}
}

// denyTenant refuses every call of one tenant, and cannot decide for
// another.
type denyTenant struct{ tenant, broken string }

func (g denyTenant) Check(_ context.Context, c host.Call) error {
	switch c.TenantID {
	case g.tenant:
		return &host.Deny{Reason: "tenant " + c.TenantID + " may not call " + c.ID}
	case g.broken:
		return errors.New("the policy store is down")
	}
	return nil
}

// The gate is consulted before every MCP call: its deny is the tool's
// failure (isError, the policy's reason), told to the hooks (the audit
// line) as a deny of face mcp; a gate that cannot decide refuses the call
// as one to send again (503), never lets it through.
func TestTheGateDecidesEveryMCPCall(t *testing.T) {
	ev := &events{}
	svc := servePackGated(t, "../../wasm-examples/conformance", conformanceTools, service.Config{Hooks: []service.Hook{ev}},
		denyTenant{tenant: "mallory", broken: "unlucky"})
	_, url := serve(t, svc, Config{})
	cs := connect(t, url, testToken)
	r := callTool(t, cs, "conformance.echo", map[string]any{"message": "x"})
	if r.IsError {
		t.Fatalf("allowed: %s", text(r))
	}
	r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "conformance.echo", Arguments: map[string]any{"message": "x"},
		Meta: sdk.Meta{metaCtx: map[string]any{"tenantId": "mallory"}}})
	if err != nil || !r.IsError || !strings.Contains(text(r), "tenant mallory may not call conformance.echo") {
		t.Fatalf("denied: %v %+v", err, r)
	}
	if e := ev.waitFor(t, "pack-gate-denied"); e.Face != "mcp" || e.TenantID != "mallory" {
		t.Errorf("the deny's event: %+v", e)
	}
	res, body := post(t, url, callBody(3, "conformance.echo", `{"message":"x"}`, `{"kindgi.com/ctx":{"tenantId":"unlucky"}}`), nil)
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "pack-gate-failed") {
		t.Errorf("a gate that cannot decide: %d %s", res.StatusCode, body)
	}
}

// tools/list pages: a pack of 1,500 tools is listed in two pages, every
// tool once, by name.
func TestToolsListPages(t *testing.T) {
	var tools []string
	for i := range 1500 {
		tools = append(tools, fmt.Sprintf(`{"id":"echo.t%04d","description":"d","input":{"type":"object"},"output":{"type":"object"},"modulePath":"echo.wasm"}`, i))
	}
	svc := servePack(t, "../../wasm-examples/echo", "["+strings.Join(tools, ",")+"]", service.Config{})
	_, url := serve(t, svc, Config{})
	cs := connect(t, url, testToken)
	first, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(first.Tools) != 1000 || first.NextCursor == "" {
		t.Fatalf("first page: %v %d %q", err, len(first.Tools), first.NextCursor)
	}
	second, err := cs.ListTools(context.Background(), &sdk.ListToolsParams{Cursor: first.NextCursor})
	if err != nil || len(second.Tools) != 500 || second.NextCursor != "" {
		t.Fatalf("second page: %v %d %q", err, len(second.Tools), second.NextCursor)
	}
	if first.Tools[0].Name != "echo.t0000" || second.Tools[499].Name != "echo.t1499" {
		t.Errorf("order: %s … %s", first.Tools[0].Name, second.Tools[499].Name)
	}
	if r := callTool(t, cs, "echo.t1234", map[string]any{"n": 1}); r.IsError || text(r) != `{"n":1}` {
		t.Errorf("a call: %s", text(r))
	}
}

// MCP 2026-07-28 without a session: server/discover says the server's
// revisions and that it serves tools (no initialize, no Mcp-Session-Id).
func TestServerDiscover(t *testing.T) {
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{})
	_, url := serve(t, svc, Config{Version: "v9"})
	h := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"server/discover"}}
	res, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, h)
	if res.StatusCode != 200 || res.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(body, `"2026-07-28"`) ||
		!strings.Contains(body, `"tools":{`) || !strings.Contains(body, `"name":"packd","version":"v9"`) {
		t.Fatalf("server/discover: %d %s", res.StatusCode, body)
	}
}

// TestATenantOverItsBudgetIs503WithItsWait: a call of a tenant that has
// spent its budget is refused before it runs with a 503, its Retry-After
// the wait its budget says (also in the error's data), over the stateless
// protocol's fast path and over a session's; another tenant is served.
func TestATenantOverItsBudgetIs503WithItsWait(t *testing.T) {
	policy := &host.Policy{Tenants: map[string]host.TenantPolicy{"slow": {Budget: &host.Budget{CallsPerSecond: 0.001}}}}
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{Policy: policy})
	_, url := serve(t, svc, Config{})
	meta := func(tenant string) string { return `{"kindgi.com/ctx":{"tenantId":"` + tenant + `","runId":"r"}}` }
	if res, body := post(t, url, callBody(1, "conformance.echo", `{"message":"x"}`, meta("slow")), nil); res.StatusCode != http.StatusOK || !strings.Contains(body, `"structuredContent":{"message":"x"}`) {
		t.Fatalf("the first call: %d %s", res.StatusCode, body)
	}
	for _, h := range []http.Header{nil, {"Mcp-Protocol-Version": {"2025-11-25"}}} {
		res, body := post(t, url, callBody(2, "conformance.echo", `{"message":"x"}`, meta("slow")), h)
		if wait, _ := strconv.Atoi(res.Header.Get("Retry-After")); res.StatusCode != http.StatusServiceUnavailable || wait < 990 || wait > 1000 ||
			!strings.Contains(body, `"code":-32000`) || !strings.Contains(body, `"retryAfterSeconds":`+res.Header.Get("Retry-After")) ||
			!strings.Contains(body, `"tenant-budget"`) || !strings.Contains(body, "spent its budget") {
			t.Fatalf("over its budget (%v): %d %q %s", h, res.StatusCode, res.Header.Get("Retry-After"), body)
		}
	}
	if res, body := post(t, url, callBody(3, "conformance.echo", `{"message":"y"}`, meta("other")), nil); res.StatusCode != http.StatusOK || !strings.Contains(body, `"structuredContent":{"message":"y"}`) {
		t.Fatalf("another tenant: %d %s", res.StatusCode, body)
	}
}
