package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

const testToken = "tok"

// cacheDir is the compilation cache the tests' packs share: each module
// compiles once for the whole package.
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "packd-mcp-test-cache-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// newService serves a pack of wasm-examples (its index.json) through a
// service, closed when the test ends.
func newService(t *testing.T, example string, sc service.Config) *service.Service {
	t.Helper()
	return serveIndex(t, host.Config{IndexPath: filepath.Join("..", "..", "wasm-examples", example, "index.json")}, sc)
}

// serve serves svc's MCP face on a loopback listener, with the token
// testToken unless cfg says NoAuth.
func serve(t *testing.T, svc *service.Service, cfg Config) (*Face, string) {
	t.Helper()
	cfg.Service = svc
	if !cfg.NoAuth {
		cfg.Token = testToken
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(f.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = f.Close(context.Background())
	})
	return f, ts.URL
}

// bearer adds the token to every request of a client.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect is the Go SDK's client (MCP 2026-07-28) on url, with the token.
func connect(t *testing.T, url, token string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestGoClientListsAndCallsTools(t *testing.T) {
	svc := newService(t, "conformance", service.Config{})
	_, url := serve(t, svc, Config{})
	cs := connect(t, url, testToken)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("protocol %q", v)
	}
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "conformance.echo,conformance.hold") {
		t.Errorf("tools: %s", got)
	}

	r := callTool(t, cs, "conformance.echo", map[string]any{"message": "hi"})
	if r.IsError || text(r) != `{"message":"hi"}` {
		t.Errorf("echo: %+v %s", r, text(r))
	}
	if sc, _ := json.Marshal(r.StructuredContent); string(sc) != `{"message":"hi"}` {
		t.Errorf("structured: %s", sc)
	}

	r = callTool(t, cs, "conformance.echo", map[string]any{"message": 5})
	if !r.IsError || !strings.Contains(text(r), "arguments at /message: must be string") {
		t.Errorf("bad input: %s", text(r))
	}
	r = callTool(t, cs, "conformance.throws", map[string]any{})
	if !r.IsError || !strings.Contains(text(r), "conformance.throws failed") {
		t.Errorf("throw: %s", text(r))
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "no.such.tool"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestATokenIsRequired(t *testing.T) {
	svc := newService(t, "conformance", service.Config{})
	_, url := serve(t, svc, Config{})
	for _, h := range []http.Header{
		{},
		{"Authorization": {"Bearer wrong"}},
		{"Authorization": {"Basic tok"}},
		{"Authorization": {"Bearer tok", "Bearer tok"}},
		{"Authorization": {"Bearer tok"}, "Kindgi-Pack-Token": {"tok"}},
	} {
		res, _ := send(t, url, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, h)
		if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("%v: %d %q", h, res.StatusCode, res.Header.Get("WWW-Authenticate"))
		}
	}
	for _, h := range []http.Header{{"Authorization": {"Bearer tok"}}, {"Authorization": {"bearer tok"}}, {"Kindgi-Pack-Token": {"tok"}}} {
		if res, body := send(t, url, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, h); res.StatusCode != http.StatusOK {
			t.Errorf("%v: %d %s", h, res.StatusCode, body)
		}
	}
}
