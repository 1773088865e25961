package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

// TestEgressIsVisibleWithoutBodiesOrSecrets: a call of testdata/gonet
// that reaches a loopback server with a secret bearer token and a body, and
// one refused, show in the call records (an egress summary), the audit log
// (one line per request: tool, tenant, host, status, bytes) and the
// metrics; no body, header value, query or secret reaches any of them.
func TestEgressIsVisibleWithoutBodiesOrSecrets(t *testing.T) {
	const secret, body, query, answer = "s3cret-tok", "body-sent-b0dy", "q=qu3ry", "answer-g0t"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Header.Get("Authorization"))
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	dir := t.TempDir()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "gonet", "gonet.wasm"))
	if err != nil {
		t.Fatalf("%v (make builds testdata/gonet/gonet.wasm)", err)
	}
	schema := `"input":{"type":"object"},"output":{"type":"object"},"modulePath":"gonet.wasm"`
	index := `{"v":1,"packId":"net","packVersion":"1.0.0","artifactVersion":"net-1","publishedAt":"2026-11-30T00:00:00.000Z",` +
		`"tools":[{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["127.0.0.1"]}},{"id":"net.offline",` + schema + `,"network":{"kind":"none"}}],` +
		`"guardrails":[],"agents":[],"flows":[]}`
	for name, data := range map[string][]byte{"index.json": []byte(index), "gonet.wasm": wasm} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	buf := &lockedBuffer{}
	cfg := StartConfig{
		Service: service.StartConfig{
			Load: host.Config{IndexPath: filepath.Join(dir, "index.json"),
				Sandbox: host.SandboxConfig{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache"), PoolSize: 2},
				Network: host.NetworkConfig{AllowAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}},
			AuditLog: filepath.Join(dir, "audit.log"), Version: "test",
		},
		HTTP: Config{Token: "tok"}, Host: "127.0.0.1", MetricsAddr: "127.0.0.1:0", Log: service.NewLog(buf),
	}
	svc, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Shutdown(context.Background()) })
	base := "http://" + svc.Addr().String()
	call := func(tool, url string) string {
		msg := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":%q},"input":{"url":%q,"method":"POST","body":%q},"ctx":{"tenantId":"acme","runId":"r","secrets":{"apiToken":%q}}}`,
			tool, url, body, secret)
		code, out := post(t, base+"/v1/invoke", msg)
		if code != 200 {
			t.Fatalf("%d %s", code, out)
		}
		return out
	}
	url := "http://127.0.0.1:" + port + "/x?" + query
	if out := call("net.fetch", url); !strings.Contains(out, answer) || !strings.Contains(out, "Bearer "+secret) {
		t.Fatalf("the allowed call: %s", out)
	}
	if out := call("net.offline", url); !strings.Contains(out, `"reason":"network-not-allowed"`) {
		t.Fatalf("the refused call: %s", out)
	}
	var metricsPort float64
	var egress []any
	for _, r := range buf.records(t) {
		if r["kind"] == "listening" {
			metricsPort, _ = r["metricsPort"].(float64)
		}
		if r["kind"] == "call" {
			egress = append(egress, r["egress"])
		}
	}
	want := fmt.Sprintf(`[map[bytesReceived:%d bytesSent:%d refused:0 requests:1] map[bytesReceived:0 bytesSent:0 refused:1 requests:0]]`, len(answer), len(body))
	if got := fmt.Sprint(egress); got != want {
		t.Errorf("the calls' egress summaries: %s, want %s", got, want)
	}
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", int(metricsPort)))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, line := range []string{
		`packd_egress_requests_total{host_class="allowed",id="net.fetch",status_class="2xx"} 1`,
		`packd_egress_requests_total{host_class="none",id="net.offline",status_class="refused"} 1`,
		`packd_egress_refusals_total{reason="network-not-allowed"} 1`,
		fmt.Sprintf(`packd_egress_bytes_total{direction="received"} %d`, len(answer)),
		fmt.Sprintf(`packd_egress_bytes_total{direction="sent"} %d`, len(body)),
	} {
		if !strings.Contains(string(m), line) {
			t.Errorf("metrics lack %s", line)
		}
	}
	if err := svc.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	audit, _ := os.ReadFile(cfg.Service.AuditLog)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(audit)), "\n") {
		if strings.Contains(l, `"event":"egress"`) {
			// time and duration vary
			l = l[strings.Index(l, `"event"`):]
			l = strings.Replace(l, l[strings.Index(l, `"durationMs"`):strings.Index(l, `,"artifactVersion"`)], `"durationMs":0`, 1)
			lines = append(lines, l)
		}
	}
	wantAudit := []string{
		`"event":"egress","tenantId":"acme","id":"net.fetch","host":"127.0.0.1","status":200,"bytesSent":14,"bytesReceived":10,"durationMs":0,"artifactVersion":"net-1"}`,
		`"event":"egress","tenantId":"acme","id":"net.offline","host":"127.0.0.1","refused":"network-not-allowed","bytesSent":0,"bytesReceived":0,"durationMs":0,"artifactVersion":"net-1"}`,
	}
	if strings.Join(lines, "\n") != strings.Join(wantAudit, "\n") {
		t.Errorf("audit egress lines:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(wantAudit, "\n"))
	}
	everything := buf.String() + string(audit) + string(m)
	for _, s := range []string{secret, body, query, answer} {
		if strings.Contains(everything, s) {
			t.Errorf("%q reached the records, the audit log or the metrics", s)
		}
	}
}
