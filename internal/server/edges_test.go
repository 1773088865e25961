package server

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

// TestHTTPEdges: a method outside HTTP's nine on a known path is 405 like
// any other wrong method (on main: 404 "No route"); a pack token sent twice
// ("right", "wrong") is 401, and a tenant header sent twice ("A", "B") to a
// service pinned to A is 421 (on main both were admitted on their first
// value); a Content-Type is application/json by its media type.
func TestHTTPEdges(t *testing.T) {
	p, _ := host.Load(context.Background(), host.Config{
		IndexPath: filepath.Join("..", "..", "testdata", "hostile", "index.json"),
		Sandbox:   host.SandboxConfig{CacheDir: filepath.Join(t.TempDir(), "cache")},
	})
	if p == nil {
		t.Fatal("the test pack did not load")
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	s := newFace(t, service.Config{Pack: p, TenantID: "A"}, Config{})
	do := func(method, path string, headers map[string][]string) (int, string) {
		req := httptest.NewRequest(method, path, strings.NewReader(invokeMsg("hostile.counter", "A")))
		req.Header["Content-Type"] = []string{"application/json"}
		for k, v := range headers {
			req.Header[k] = v
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	ok := map[string][]string{"Kindgi-Pack-Token": {"tok"}, "Kindgi-Tenant-Id": {"A"}}
	for _, c := range []struct {
		method, path string
		headers      map[string][]string
		status       int
		body         string
	}{
		{"PROPFIND", "/v1/invoke", ok, 405, `{"error":"Use POST"}`},
		{"FOO", "/v1/info", ok, 405, `{"error":"Use GET"}`},
		{"FOO", "/healthz", nil, 405, `{"error":"Use GET"}`},
		{"FOO", "/v1/tools/hostile.counter", ok, 405, `{"error":"Use GET"}`},
		{"FOO", "/nope", nil, 404, `{"error":"No route /nope"}`},
		{"POST", "/v1/invoke", map[string][]string{"Kindgi-Pack-Token": {"tok", "wrong"}, "Kindgi-Tenant-Id": {"A"}}, 401, `{"error":"Bad pack token"}`},
		{"POST", "/v1/invoke", map[string][]string{"Kindgi-Pack-Token": {"wrong", "tok"}, "Kindgi-Tenant-Id": {"A"}}, 401, `{"error":"Bad pack token"}`},
		{"POST", "/v1/invoke", map[string][]string{"Kindgi-Pack-Token": {"tok"}, "Kindgi-Tenant-Id": {"A", "B"}}, 421,
			`{"error":"This pack service is pinned to another tenant","code":"pack-tenant-mismatch"}`},
		{"POST", "/v1/invoke", map[string][]string{"Kindgi-Pack-Token": {"tok"}}, 421,
			`{"error":"The kindgi-tenant-id header is required by this pack service","code":"pack-tenant-mismatch"}`},
		{"POST", "/v1/invoke", ok, 200, ""},
		// the media type, not a substring of the header (on main these two
		// were 200)
		{"POST", "/v1/invoke", withType(ok, "text/plain; note=application/json"), 415, `{"error":"Content-Type must be application/json"}`},
		{"POST", "/v1/invoke", withType(ok, "application/json-seq"), 415, `{"error":"Content-Type must be application/json"}`},
		{"POST", "/v1/invoke", withType(ok, "Application/JSON; charset=utf-8"), 200, ""},
	} {
		status, body := do(c.method, c.path, c.headers)
		if status != c.status || c.body != "" && body != c.body {
			t.Errorf("%s %s %v: %d %s, want %d %s", c.method, c.path, c.headers, status, body, c.status, c.body)
		}
	}
}

func TestPathMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"/v1/invoke", "/v1/invoke", true}, {"/v1/invoke", "/v1/info", false}, {"/v1/invoke", "/v1", false},
		{"/v1/tools/:id", "/v1/tools/a.b", true}, {"/v1/tools/:id", "/v1/tools/", false}, {"/v1/tools/:id", "/v1/tools/a/b", false},
		{"/v1/tools/:id", "/v1/tools", false}, {"/healthz", "/", false},
	} {
		if got := pathMatches(c.pattern, c.path); got != c.want {
			t.Errorf("pathMatches(%q, %q) = %v", c.pattern, c.path, got)
		}
	}
}

// withType is headers with a Content-Type.
func withType(headers map[string][]string, contentType string) map[string][]string {
	out := map[string][]string{"Content-Type": {contentType}}
	for k, v := range headers {
		out[k] = v
	}
	return out
}
