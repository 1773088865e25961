package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP face as real clients see it: the official Go SDK's (MCP
// 2026-07-28) and TypeScript SDK's (2025-11-25, testdata/mcp/client.mjs),
// over packd serve's /mcp and over packd mcp's stdio, on the Go, C and
// TypeScript conformance fixtures.

// mcpFixture is a conformance fixture's index with conformance.noisy
// marked internal, and its module root.
func mcpFixture(t *testing.T, example string) (string, string) {
	t.Helper()
	src, _ := filepath.Abs(filepath.Join("..", "..", "wasm-examples", example))
	b, err := os.ReadFile(filepath.Join(src, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx map[string]any
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	for _, tool := range idx["tools"].([]any) {
		tm := tool.(map[string]any)
		if tm["id"] == "conformance.noisy" {
			tm["visibility"] = "internal"
		}
	}
	b, _ = json.Marshal(idx)
	path := filepath.Join(t.TempDir(), "index.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, src
}

// bearerOver sends every request with the token as a bearer token,
// through base.
type bearerOver struct {
	token string
	base  http.RoundTripper
}

func (b bearerOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func bearerTransport(token string) http.RoundTripper { return bearerOver{token, http.DefaultTransport} }

func mcpText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// checkGoClient lists and calls a fixture's tools with the Go SDK's client.
func checkGoClient(t *testing.T, cs *sdk.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "conformance.echo") || strings.Contains(got, "conformance.noisy") {
		t.Fatalf("tools: %s", got)
	}
	call := func(name string, args map[string]any, meta sdk.Meta) *sdk.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args, Meta: meta})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	if r := call("conformance.echo", map[string]any{"message": "hi"}, nil); r.IsError || mcpText(r) != `{"message":"hi"}` {
		t.Errorf("echo: %s", mcpText(r))
	}
	if r := call("conformance.echo", map[string]any{"message": 7}, nil); !r.IsError || !strings.Contains(mcpText(r), "/message: must be string") {
		t.Errorf("bad input: %s", mcpText(r))
	}
	if r := call("conformance.throws", map[string]any{}, nil); !r.IsError || !strings.Contains(mcpText(r), "conformance.throws failed") {
		t.Errorf("throws: %s", mcpText(r))
	}
	if r := call("conformance.sleep", map[string]any{"ms": 20000}, sdk.Meta{"kindgi.com/timeoutMs": 300}); !r.IsError || !strings.Contains(mcpText(r), "time limit") {
		t.Errorf("deadline: %s", mcpText(r))
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "conformance.noisy", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("an internal tool: %v", err)
	}
	actx, acancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer acancel()
	if _, err := cs.CallTool(actx, &sdk.CallToolParams{Name: "conformance.sleep", Arguments: map[string]any{"ms": 20000}}); err == nil {
		t.Error("an aborted call answered")
	}
}

// tsClient runs testdata/mcp/client.mjs and reads what it printed.
func tsClient(t *testing.T, args ...string) map[string]json.RawMessage {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: make test installs it (scripts/deps)")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatal("the MCP TypeScript SDK is not installed: make test installs it (npm ci)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("..", "..", "testdata", "mcp", "client.mjs")}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s%s", err, out, stderr.String())
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("the TypeScript client printed %s (%v)", out, err)
	}
	return m
}

// checkTSClient checks what the TypeScript client found.
func checkTSClient(t *testing.T, m map[string]json.RawMessage) {
	t.Helper()
	type result struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
		Error   string `json:"error"`
	}
	get := func(k string) result {
		var r result
		_ = json.Unmarshal(m[k], &r)
		return r
	}
	var tools []string
	_ = json.Unmarshal(m["tools"], &tools)
	if got := strings.Join(tools, ","); !strings.Contains(got, "conformance.echo") || strings.Contains(got, "conformance.noisy") {
		t.Errorf("tools: %s", got)
	}
	if r := get("echo"); r.IsError || r.Text != `{"message":"hello from TypeScript"}` {
		t.Errorf("echo: %+v", r)
	}
	if r := get("badInput"); !r.IsError || !strings.Contains(r.Text, "/message: must be string") {
		t.Errorf("bad input: %+v", r)
	}
	if r := get("throws"); !r.IsError || !strings.Contains(r.Text, "failed") {
		t.Errorf("throws: %+v", r)
	}
	if r := get("deadline"); !r.IsError || !strings.Contains(r.Text, "time limit") {
		t.Errorf("deadline: %+v", r)
	}
	if r := get("internal"); r.Error == "" || !strings.Contains(r.Error, "unknown tool") {
		t.Errorf("internal: %+v", r)
	}
	if r := get("aborted"); r.Error == "" {
		t.Errorf("aborted: %+v", r)
	}
	if r := get("after"); r.IsError || r.Text != `{"message":"after"}` {
		t.Errorf("after the abort: %+v", r)
	}
	if v, ok := m["serverSawCancelled"]; ok && string(v) != "true" {
		t.Errorf("packd mcp did not cancel the aborted call")
	}
}

// waitCancelled waits for packd's n-th call line of a cancelled call over
// MCP.
func waitCancelled(t *testing.T, s *served, n int) {
	t.Helper()
	for range 400 {
		seen := 0
		for _, l := range s.stderr.snapshot() {
			if kindIs("call")(l) && strings.Contains(l, `"face":"mcp"`) && strings.Contains(l, `"outcome":"cancelled"`) {
				seen++
			}
		}
		if seen >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("packd never cancelled %d calls over MCP:\n%s", n, strings.Join(s.stderr.snapshot(), "\n"))
}

func TestMCPClientsCallTheFixturesTools(t *testing.T) {
	for _, example := range []string{"conformance", "c-conformance", "ts-conformance", "py-conformance"} {
		t.Run(example, func(t *testing.T) {
			index, root := mcpFixture(t, example)

			// Streamable HTTP on packd serve's /mcp.
			s := start(t, index, nil, "--module-root", root)
			c := sdk.NewClient(&sdk.Implementation{Name: "go-test", Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.base + "/mcp",
				HTTPClient: &http.Client{Transport: bearerTransport(s.token)}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkGoClient(t, cs)
			_ = cs.Close()
			waitCancelled(t, s, 1) // the Go client's abort
			checkTSClient(t, tsClient(t, "http", s.base+"/mcp", s.token))
			waitCancelled(t, s, 2) // the TypeScript client's notifications/cancelled

			// stdio: packd mcp, started by each client.
			cmd := exec.Command(packdPath, "mcp", "--index", index, "--module-root", root, "--cache-dir", cacheDir)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			cs, err = c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkGoClient(t, cs)
			_ = cs.Close()
			checkTSClient(t, tsClient(t, "stdio", packdPath, "--index", index, "--module-root", root, "--cache-dir", cacheDir))
		})
	}
}

// mcpSession connects the Go SDK's client to a served packd's /mcp.
func mcpSession(t *testing.T, s *served) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "go-test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport(s.token)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPCallsAreRecordedAndReplayExactly: calls over MCP recorded by
// packd serve --record (with a secret in the call's context, and an
// outbound request carrying a bound credential) replay offline with the
// same output and fuel, and their records hold neither secret.
func TestMCPCallsAreRecordedAndReplayExactly(t *testing.T) {
	const ctxSecret, bound = "mcp-s3cret-ctx", "mcp-tok-bound-7"
	var mu sync.Mutex
	var seen []string
	api := upstream(t, "127.0.0.1:0", &seen, &mu)
	index := netPackIndex(t, "gonet/gonet.wasm")
	dir := t.TempDir()
	s := start(t, index, map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8"}, "--record", dir)
	cs := mcpSession(t, s)
	meta := sdk.Meta{"kindgi.com/ctx": map[string]any{"tenantId": "t-mcp", "runId": "run-mcp",
		"secrets": map[string]any{"apiToken": bound, "apiKey": ctxSecret}}}
	for i := range 4 {
		r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "net.fetch",
			Arguments: map[string]any{"url": fmt.Sprintf("%s/reflect?i=%d", api, i), "nonce": i%2 == 0}, Meta: meta})
		if err != nil || r.IsError {
			t.Fatalf("call %d: %v %s", i, err, mcpText(r))
		}
		// The bound credential reached the API and never the pack, which
		// got the API's echo of it redacted.
		if text := mcpText(r); strings.Contains(text, bound) || !strings.Contains(text, "[credential redacted by packd]") {
			t.Fatalf("call %d answered %s", i, text)
		}
	}
	// The TypeScript SDK's client the same.
	var ts struct {
		Fetch struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"fetch"`
	}
	out := tsClient(t, "net", s.base+"/mcp", s.token, api+"/reflect?ts=1", bound)
	raw, _ := json.Marshal(out)
	_ = json.Unmarshal(raw, &ts)
	if ts.Fetch.IsError || strings.Contains(ts.Fetch.Text, bound) || !strings.Contains(ts.Fetch.Text, "[credential redacted by packd]") {
		t.Errorf("the TypeScript client's fetch: %s", raw)
	}
	mu.Lock()
	if len(seen) != 5 || !strings.Contains(seen[0], "auth=Bearer "+bound) || !strings.Contains(seen[4], "auth=Bearer "+bound) {
		t.Errorf("the API saw %v", seen)
	}
	mu.Unlock()
	_ = cs.Close()
	if m := scrape(t, s); !strings.Contains(m, `packd_calls_total{face="mcp",id="net.fetch",outcome="ok",target="tool"} 5`) {
		t.Errorf("the metrics do not count the MCP calls by face:\n%s", m)
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("packd serve exited %d", code)
	}
	// Over stdio the same: the credential reaches the API, never the pack.
	cmd := exec.Command(packdPath, "mcp", "--index", index, "--cache-dir", cacheDir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PACKD_NETWORK_ALLOW=127.0.0.0/8"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stdio, err := sdk.NewClient(&sdk.Implementation{Name: "go-test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := stdio.CallTool(ctx, &sdk.CallToolParams{Name: "net.fetch", Arguments: map[string]any{"url": api + "/reflect?stdio=1"}, Meta: meta})
	if err != nil || sr.IsError || strings.Contains(mcpText(sr), bound) || !strings.Contains(mcpText(sr), "[credential redacted by packd]") {
		t.Errorf("over stdio: %v %s", err, mcpText(sr))
	}
	_ = stdio.Close()
	mu.Lock()
	if len(seen) != 6 || !strings.Contains(seen[5], "/reflect auth=Bearer "+bound) {
		t.Errorf("over stdio the API saw %v", seen)
	}
	mu.Unlock()
	raw, recs := servedRecords(t, dir)
	if len(recs) != 5 {
		t.Fatalf("%d records of 5 calls", len(recs))
	}
	if bytes.Contains(raw, []byte(bound)) || bytes.Contains(raw, []byte(ctxSecret)) {
		t.Fatal("the records hold a secret")
	}
	secretsFile := filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(secretsFile, []byte(`{"apiKey":"`+ctxSecret+`","apiToken":"`+bound+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := replayProc(t, nil, "--index", index, "--secrets", secretsFile, dir)
	if r.code != 0 || !strings.Contains(r.stdout, "5 of 5 records replayed identically") {
		t.Fatalf("packd replay: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestMCPFlagsAndLoadProblems: --mcp no-auth serves only on a loopback
// --host; a tool MCP cannot serve is a problem of packd check and of
// packd serve's boot unless --mcp off, which also leaves /mcp unrouted.
func TestMCPFlagsAndLoadProblems(t *testing.T) {
	s := launch(t, filepath.Join("..", "..", "wasm-examples", "echo", "index.json"), nil, "--host", "0.0.0.0", "--mcp", "no-auth")
	line := s.stderr.waitFor(t, 30*time.Second, kindIs("config-invalid"))
	if !strings.Contains(line, "--mcp no-auth serves without a token: only on a loopback --host") {
		t.Errorf("no-auth on every interface: %s", line)
	}

	dir := t.TempDir()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "wasm-examples", "echo", "echo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	index := `{"v":1,"packId":"p","packVersion":"1","artifactVersion":"1","publishedAt":"x","guardrails":[],"agents":[],"flows":[],"tools":[` +
		`{"id":"echo echo","input":{"type":"object"},"output":{"type":"object"},"modulePath":"echo.wasm"}]}`
	_ = os.WriteFile(filepath.Join(dir, "index.json"), []byte(index), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "echo.wasm"), wasm, 0o644)
	r := packd(t, "check", "--index", filepath.Join(dir, "index.json"), "--cache-dir", cacheDir)
	if r.code != 1 || !strings.Contains(r.stdout, `tools[0] (echo echo) "id" cannot be an MCP tool name`) {
		t.Errorf("packd check: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := packd(t, "check", "--index", filepath.Join(dir, "index.json"), "--cache-dir", cacheDir, "--mcp", "off"); r.code != 0 {
		t.Errorf("packd check --mcp off: %d %s%s", r.code, r.stdout, r.stderr)
	}
	s = launch(t, filepath.Join(dir, "index.json"), nil)
	if line := s.stderr.waitFor(t, 30*time.Second, kindIs("boot-failed")); !strings.Contains(line, "cannot be an MCP tool name") {
		t.Errorf("serve: %s", line)
	}
	s = start(t, filepath.Join(dir, "index.json"), nil, "--mcp", "off")
	if r := s.do(t, "POST", "/mcp", `{}`, map[string]string{"Authorization": "Bearer " + s.token}); r.status != http.StatusNotFound {
		t.Errorf("/mcp with --mcp off: %d %s", r.status, r.body)
	}
}
