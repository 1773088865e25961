package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestServiceEgress: the operator's side of outbound HTTP, end to end.
// packd check reports a tool with unrestricted network unless
// --network-unrestricted; packd serve dials the loopback test server only
// with --network-allow, and its call records carry the egress summary.
func TestServiceEgress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") }))
	t.Cleanup(srv.Close)
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "cnet", "cnet.wasm"))
	if err != nil {
		t.Fatalf("%v (make builds testdata/cnet/cnet.wasm)", err)
	}
	dir := t.TempDir()
	schema := `"input":{"type":"object"},"output":{"type":"object"},"modulePath":"cnet.wasm"`
	index := `{"v":1,"packId":"net","packVersion":"1.0.0","artifactVersion":"net-1","publishedAt":"2026-11-30T00:00:00.000Z","agents":[],"flows":[],"guardrails":[],` +
		`"tools":[{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["127.0.0.1"]}},{"id":"net.offline",` + schema + `,"network":{"kind":"unrestricted"}}]}`
	idx := filepath.Join(dir, "index.json")
	for name, data := range map[string][]byte{"index.json": []byte(index), "cnet.wasm": wasm} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := packd(t, "check", "--index", idx); r.code == 0 || !strings.Contains(r.stdout+r.stderr, "net.offline: network is unrestricted, which this service does not allow (--network-unrestricted)") {
		t.Errorf("check without --network-unrestricted: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := packd(t, "check", "--index", idx, "--network-unrestricted"); r.code != 0 {
		t.Errorf("check with --network-unrestricted: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := packd(t, "check", "--index", idx, "--network-allow", "localhost"); r.code == 0 || !strings.Contains(r.stderr, `--network-allow (or PACKD_NETWORK_ALLOW): "localhost" is neither an IP address nor a CIDR range`) {
		t.Errorf("a bad --network-allow: %d %s", r.code, r.stderr)
	}
	fetch := invokeBody("net.fetch", "", `{"url":"`+srv.URL+`/ping"}`, conformanceCtx)

	s := start(t, idx, nil, "--network-unrestricted")
	expect(t, s.invoke(t, fetch), 200, `{"v":2,"kind":"result","output":{"reason":"address-not-allowed","message":"127.0.0.1 is a loopback address, which packd dials only when the operator allows it (--network-allow)"}}`)

	s = start(t, idx, map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8"}, "--network-unrestricted")
	expect(t, s.invoke(t, fetch), 200, `{"v":2,"kind":"result","output":{"status":200,"body":"pong"}}`)
	line := s.stderr.waitFor(t, 10e9, func(l string) bool { return kindIs("call")(l) && strings.Contains(l, `"egress"`) })
	if eg, _ := record(t, line)["egress"].(map[string]any); eg["requests"] != 1.0 || eg["bytesReceived"] != 4.0 {
		t.Errorf("the call record's egress: %s", line)
	}
}

// TestANetworkHostFromTheEnvironment: a tool's network.hosts may name a
// host by process variable ("${env.CRM_URL}"), read at load: the host of
// that URL is reachable and no other; a variable unset, undeclared, or
// naming no host is a load problem that says which.
func TestANetworkHostFromTheEnvironment(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	api := upstream(t, "127.0.0.1:0", &seen, &mu)
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "gonet", "gonet.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(env string) string {
		dir := t.TempDir()
		index := `{"v":1,"packId":"envhost","packVersion":"1.0.0","artifactVersion":"envhost-1","publishedAt":"2026-12-05T00:00:00.000Z","agents":[],"flows":[],"guardrails":[],` +
			`"env":` + env + `,"tools":[{"id":"net.fetch","input":{"type":"object"},"output":{"type":"object"},"modulePath":"gonet.wasm",` +
			`"network":{"kind":"allowlist","hosts":["${env.CRM_URL}"]}}]}`
		_ = os.WriteFile(filepath.Join(dir, "index.json"), []byte(index), 0o644)
		_ = os.WriteFile(filepath.Join(dir, "gonet.wasm"), wasm, 0o644)
		return filepath.Join(dir, "index.json")
	}
	index := write(`{"required":["CRM_URL"]}`)
	s := start(t, index, map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8", "CRM_URL": api + "/v2"})
	call := func(url string) string {
		r := s.invoke(t, invokeBody("net.fetch", "", `{"url":"`+url+`"}`, `{"tenantId":"t","runId":"r"}`))
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return r.body
	}
	if body := call(api + "/headers"); !strings.Contains(body, `"status":200`) {
		t.Errorf("the host CRM_URL names: %s", body)
	}
	if body := call("http://127.0.0.2:1/x"); !strings.Contains(body, "not on this tool's allowlist") {
		t.Errorf("another host: %s", body)
	}
	for _, c := range []struct{ env, value, want string }{
		{`{"required":["CRM_URL"]}`, "", "network.hosts names ${env.CRM_URL}, which is not set"},
		{`{"optional":["OTHER"]}`, "https://crm.example.com", "which the index's env does not declare"},
		{`{"required":["CRM_URL"]}`, "http://", "names no host"},
	} {
		env := map[string]string{}
		if c.value != "" {
			env["CRM_URL"] = c.value
		}
		r := packdProcEnv(t, envList(env), "check", "--index", write(c.env))
		if r.code != 1 || !strings.Contains(r.stdout, c.want) {
			t.Errorf("%s with CRM_URL=%q: %d %s%s", c.env, c.value, r.code, r.stdout, r.stderr)
		}
	}
}

func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}
