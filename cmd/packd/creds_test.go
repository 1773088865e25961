package main

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstream is a loopback API on addr, which notes in seen the host, path,
// Authorization, X-Api-Key and Idempotency-Key of every request: /headers answers the
// Authorization and Idempotency-Key headers it got, /reflect echoes its request's
// Authorization in its body and a header (as a hostile or careless API
// may), /gzip does so gzip-compressed when asked for gzip (as most web
// servers compress on request), /redirect redirects to ?to=.
func upstream(t *testing.T, addr string, seen *[]string, mu *sync.Mutex) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		line := r.Host + r.URL.Path + " auth=" + r.Header.Get("Authorization") + " key=" + r.Header.Get("X-Api-Key")
		if k := r.Header.Get("Idempotency-Key"); k != "" {
			line += " idem=" + k
		}
		*seen = append(*seen, line)
		mu.Unlock()
		switch r.URL.Path {
		case "/headers":
			io.WriteString(w, "auth="+r.Header.Get("Authorization")+" key="+r.Header.Get("Idempotency-Key"))
		case "/reflect":
			w.Header().Set("X-Seen", r.Header.Get("Authorization"))
			io.WriteString(w, "you sent "+r.Header.Get("Authorization"))
		case "/gzip":
			if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				io.WriteString(w, "you sent "+r.Header.Get("Authorization"))
				return
			}
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, "you sent "+r.Header.Get("Authorization"))
			zw.Close()
		case "/redirect":
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		}
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestBoundCredentialsNeverReachThePack: a secret the index binds to a
// host reaches that host in the header packd writes, and nowhere else:
// the pack's ctx.secrets and environment lack it, so it has nothing to
// log, echo or send to another allowlisted host; a redirect to another
// host arrives without it; an API that reflects it hands the pack a
// redacted copy; a pack's own header of that name is refused. The same
// call twice sends the same Idempotency-Key; a mutating: false tool's
// POST is refused and its GET goes through. No record, audit line,
// metric or span holds the secret.
func TestBoundCredentialsNeverReachThePack(t *testing.T) {
	const secret, envSecret = "s3cret-VALUE-4f1d", "env-s3cret-9a2b"
	var mu sync.Mutex
	var seen []string
	a, b := upstream(t, "127.0.0.1:0", &seen, &mu), upstream(t, "127.0.0.2:0", &seen, &mu)
	col := newCollector(t)
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "gonet", "gonet.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	schema := `"input":{"type":"object"},"output":{"type":"object"},"modulePath":"gonet.wasm"`
	index := `{"v":1,"packId":"creds","packVersion":"1.0.0","artifactVersion":"creds-1","publishedAt":"2026-12-02T00:00:00.000Z","agents":[],"flows":[],"guardrails":[],` +
		`"env":{"required":["PAY_TOKEN"],"optional":[]},"tools":[` +
		`{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["127.0.0.1","127.0.0.2"],` +
		`"credentials":{"127.0.0.1":{"secret":"apiToken","scheme":"Bearer"},"127.0.0.2":{"env":"PAY_TOKEN","header":"X-Api-Key"}}}},` +
		`{"id":"net.offline",` + schema + `,"mutating":false,"network":{"kind":"allowlist","hosts":["127.0.0.1"]}}]}`
	for name, data := range map[string][]byte{"index.json": []byte(index), "gonet.wasm": wasm} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	audit := filepath.Join(dir, "audit.jsonl")
	s := start(t, filepath.Join(dir, "index.json"), map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8", "PAY_TOKEN": envSecret,
		"OTEL_EXPORTER_OTLP_ENDPOINT": col.URL, "OTEL_BSP_SCHEDULE_DELAY": "50"}, "--audit-log", audit)
	type out struct {
		Status  int                        `json:"status"`
		Body    string                     `json:"body"`
		Seen    string                     `json:"seen"`
		Reason  string                     `json:"reason"`
		Message string                     `json:"message"`
		Secrets map[string]json.RawMessage `json:"secrets"`
		Env     []string                   `json:"env"`
	}
	call := func(tool, input, key string) out {
		t.Helper()
		ctx := `{"tenantId":"t1","runId":"r","idempotencyKey":"` + key + `","secrets":{"apiToken":"` + secret + `","other":"not-bound"}}`
		r := s.invoke(t, invokeBody(tool, "", input, ctx))
		var m struct {
			Output out `json:"output"`
		}
		if r.status != 200 || json.Unmarshal([]byte(r.body), &m) != nil {
			t.Fatalf("%s %s: %d %s", tool, input, r.status, r.body)
		}
		if strings.Contains(r.body, secret) || strings.Contains(r.body, envSecret) {
			t.Fatalf("the pack held a bound credential: %s", r.body)
		}
		return m.Output
	}

	// The bound host gets it; the pack sees neither secret.
	o := call("net.fetch", `{"url":"`+a+`/headers"}`, "k-1")
	mu.Lock()
	got := strings.Join(seen, "\n")
	mu.Unlock()
	hostA, hostB := strings.TrimPrefix(a, "http://"), strings.TrimPrefix(b, "http://")
	if got != hostA+"/headers auth=Bearer "+secret+" key=" {
		t.Errorf("the bound host did not get the credential: %s", got)
	}
	if o.Body != "auth=[credential redacted by packd] key=" {
		t.Errorf("the bound host's echo of it reached the pack as %q", o.Body)
	}
	if len(o.Secrets) != 1 || string(o.Secrets["other"]) != `"not-bound"` || len(o.Env) != 0 {
		t.Errorf("the pack's ctx.secrets %v and environment %v", o.Secrets, o.Env)
	}
	// The other host gets its own credential (a process variable), never
	// the first; so does a redirect from the first to it.
	call("net.fetch", `{"url":"`+b+`/headers"}`, "k-1")
	call("net.fetch", `{"url":"`+a+`/redirect?to=`+b+`/headers"}`, "k-1")
	mu.Lock()
	got = strings.Join(seen[1:], "\n")
	mu.Unlock()
	if want := hostB + "/headers auth= key=" + envSecret + "\n" + hostA + "/redirect auth=Bearer " + secret + " key=\n" + hostB + "/headers auth= key=" + envSecret; got != want {
		t.Errorf("requests seen:\n%s\nwant\n%s", got, want)
	}
	// An API that reflects the credential hands the pack a redacted copy.
	if o := call("net.fetch", `{"url":"`+a+`/reflect"}`, "k-1"); o.Body != "you sent [credential redacted by packd]" || o.Seen != "[credential redacted by packd]" {
		t.Errorf("the reflected credential reached the pack: %q, %q", o.Body, o.Seen)
	}
	// The pack's own header of the bound name is refused.
	if o := call("net.fetch", `{"url":"`+a+`/headers","headers":{"Authorization":"Bearer mine"}}`, "k-1"); o.Reason != "bad-request" || !strings.Contains(o.Message, "packd's to write") {
		t.Errorf("a pack's own Authorization to the bound host: %+v", o)
	}
	// The same call twice sends the same key for each of its POSTs;
	// another call, other keys.
	posts := func(key string) []string {
		t.Helper()
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		call("net.fetch", `{"url":"`+a+`/headers","method":"POST","body":"x","times":2}`, key)
		mu.Lock()
		defer mu.Unlock()
		var keys []string
		for _, l := range seen[n:] {
			_, k, _ := strings.Cut(l, " idem=")
			keys = append(keys, k)
		}
		return keys
	}
	k1, k1again, k2 := posts("5f0c2a5e-0000-5000-8000-000000000001"), posts("5f0c2a5e-0000-5000-8000-000000000001"), posts("5f0c2a5e-0000-5000-8000-000000000002")
	if len(k1) != 2 || len(k1[0]) != 36 || len(k1[1]) != 36 || k1[0] == k1[1] || !slices.Equal(k1, k1again) || k1[0] == k2[0] || k1[1] == k2[1] {
		t.Errorf("Idempotency-Keys of the same call twice %q and %q, of another %q", k1, k1again, k2)
	}
	// mutating: false: a POST is refused, a GET goes through.
	if o := call("net.offline", `{"url":"`+a+`/headers","method":"POST","body":"x"}`, "k-1"); o.Reason != "read-only" {
		t.Errorf("a read-only tool's POST: %+v", o)
	}
	if o := call("net.offline", `{"url":"`+a+`/headers"}`, "k-1"); o.Status != 200 {
		t.Errorf("a read-only tool's GET: %+v", o)
	}
	// A pack asking for gzip gets the reflection uncompressed and
	// redacted: packd asked for identity (before, the pack got it
	// compressed, unscrubbed, and gunzipped the token).
	if o := call("net.fetch", `{"url":"`+a+`/gzip","headers":{"Accept-Encoding":"gzip"}}`, "k-1"); o.Body != "you sent [credential redacted by packd]" {
		t.Errorf("the credential reflected compressed reached the pack as %q", o.Body)
	}

	// Nothing packd writes holds either secret.
	col.waitSpans(t, 10)
	time.Sleep(200 * time.Millisecond)
	auditLines := ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(audit)
		if auditLines = string(b); strings.Count(auditLines, `"event":"egress"`) >= 12 {
			break
		}
	}
	if !strings.Contains(auditLines, `"credential":"secret apiToken"`) || !strings.Contains(auditLines, `"credential":"env PAY_TOKEN"`) {
		t.Errorf("the audit log does not say which credentials were attached:\n%s", auditLines)
	}
	col.mu.Lock()
	var spans strings.Builder
	credentialSpans := 0
	for _, sp := range col.spans {
		spans.WriteString(sp.String())
		if attrs(sp)["packd.egress.credential"] == "secret apiToken" {
			credentialSpans++
		}
	}
	col.mu.Unlock()
	if credentialSpans == 0 {
		t.Error("no span says a credential was attached")
	}
	metrics := scrape(t, s)
	if !strings.Contains(metrics, `packd_egress_refusals_total{reason="read-only"} 1`) {
		t.Error("the read-only refusal is not counted")
	}
	for what, text := range map[string]string{"records": strings.Join(s.stderr.snapshot(), "\n") + strings.Join(s.stdout.snapshot(), "\n"),
		"the audit log": auditLines, "the metrics": metrics, "the spans": spans.String()} {
		if strings.Contains(text, secret) || strings.Contains(text, envSecret) {
			t.Errorf("%s hold a bound credential", what)
		}
	}
}

// TestBoundCredentialsInEveryLanguage: the same binding serves a pack in
// Go (abi/guest/egress), C (kindgi_http) and TypeScript (fetch), each of
// which would send ctx.secrets.apiToken itself if it had it: the API gets
// packd's header, and the pack's answer holds no secret.
func TestBoundCredentialsInEveryLanguage(t *testing.T) {
	const secret = "tok-every-language-77"
	var mu sync.Mutex
	var seen []string
	a := upstream(t, "127.0.0.1:0", &seen, &mu)
	for _, module := range []string{"gonet/gonet.wasm", "cnet/cnet.wasm", "jsnet/net.wasm"} {
		t.Run(filepath.Dir(module), func(t *testing.T) {
			s := start(t, netPackIndex(t, module), map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8"})
			mu.Lock()
			seen = nil
			mu.Unlock()
			r := s.invoke(t, invokeBody("net.fetch", "", `{"url":"`+a+`/headers"}`, `{"tenantId":"t1","runId":"r","secrets":{"apiToken":"`+secret+`"}}`))
			mu.Lock()
			got := strings.Join(seen, "\n")
			mu.Unlock()
			if r.status != 200 || strings.Contains(r.body, secret) || !strings.Contains(r.body, `[credential redacted by packd]`) {
				t.Errorf("the pack's answer: %d %s", r.status, r.body)
			}
			if got != strings.TrimPrefix(a, "http://")+"/headers auth=Bearer "+secret+" key=" {
				t.Errorf("the API saw %q", got)
			}
		})
	}
}
