package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

func (l *lockedBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a record: %q", line)
		}
		out = append(out, r)
	}
	return out
}

func kinds(recs []map[string]any) []string {
	var k []string
	for _, r := range recs {
		if s, _ := r["kind"].(string); s != "" && s != "call" && s != "guest-output" {
			k = append(k, s)
		}
	}
	return k
}

// serviceConfig serves hostile.counter alone (of the hostile pack, whose
// index has a module that does not load).
func serviceConfig(t *testing.T, buf *lockedBuffer) StartConfig {
	t.Helper()
	index := filepath.Join(t.TempDir(), "index.json")
	err := os.WriteFile(index, []byte(`{"v":1,"packId":"hostile","packVersion":"1.0.0","artifactVersion":"hostile-1","publishedAt":"2026-11-30T00:00:00.000Z",`+
		`"tools":[{"id":"hostile.counter","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"counter.wasm"}],`+
		`"guardrails":[],"agents":[],"flows":[]}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "hostile"))
	return StartConfig{
		Service: service.StartConfig{
			Load: host.Config{IndexPath: index, ModuleRoot: root,
				Sandbox: host.SandboxConfig{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache"), PoolSize: 2}},
			Calls:    service.Config{TenantID: "t1"},
			AuditLog: filepath.Join(t.TempDir(), "audit.log"),
			Environ:  []string{"PATH=/bin", "KINDGI_PACK_SERVICE_TOKEN=tok"},
			Version:  "test",
		},
		HTTP:        Config{Token: "tok"},
		Host:        "127.0.0.1",
		MetricsAddr: "127.0.0.1:0",
		Log:         service.NewLog(buf),
	}
}

func post(t *testing.T, url, body string, headers ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("kindgi-pack-token", "tok")
	req.Header.Set("content-type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	c := &http.Client{Timeout: 20 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServiceRunsAndShutsDownInOrder: Start alone wires the whole service
// (the pin's both halves, metrics, call records, audit log, the metrics
// listener), and Shutdown drains, flushes the audit log and writes the
// stopped record last.
func TestServiceRunsAndShutsDownInOrder(t *testing.T) {
	buf := &lockedBuffer{}
	cfg := serviceConfig(t, buf)
	svc, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Shutdown(context.Background()) })
	base := "http://" + svc.Addr().String()
	if code, body := post(t, base+"/v1/invoke", invokeMsg("hostile.counter", "t1"), "kindgi-tenant-id", "t1"); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	// the pin's body half, with no wiring of it but Config.TenantID
	if code, body := post(t, base+"/v1/invoke", invokeMsg("hostile.counter", "t2"), "kindgi-tenant-id", "t1"); code != 421 {
		t.Fatalf("ctx.tenantId t2 under a t1 pin: %d %s", code, body)
	}
	recs := buf.records(t)
	var metricsPort float64
	for _, r := range recs {
		if r["kind"] == "listening" {
			metricsPort, _ = r["metricsPort"].(float64)
			if r["port"] != float64(svc.Addr().(*net.TCPAddr).Port) || r["poolSize"] != 2.0 {
				t.Fatalf("listening record %v", r)
			}
		}
	}
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", int(metricsPort)))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(m), `packd_calls_total{face="http",id="hostile.counter",outcome="ok",target="tool"} 1`) {
		t.Fatalf("metrics:\n%s", m)
	}

	if err := svc.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := svc.Shutdown(context.Background()); err != nil {
		t.Fatal("a second Shutdown:", err)
	}
	got := kinds(buf.records(t))
	want := []string{"env-dropped", "listening", "draining", "stopped"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("lifecycle records %v, want %v", got, want)
	}
	audit, _ := os.ReadFile(cfg.Service.AuditLog)
	if n := strings.Count(string(audit), "\n"); n != 2 || !strings.Contains(string(audit), `"outcome":"pack-tenant-mismatch"`) {
		t.Fatalf("audit log after Shutdown:\n%s", audit)
	}
	if _, err := net.DialTimeout("tcp", svc.Addr().String(), time.Second); err == nil {
		t.Fatal("the service still accepts connections after Shutdown")
	}
}

// TestServiceBootFailureReleasesWhatItTook: a service that cannot start
// (an explicit metrics address that is taken, a policy file that cannot be
// read) says every problem in one boot-failed record and leaves its port
// free.
func TestServiceBootFailureReleasesWhatItTook(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()

	buf := &lockedBuffer{}
	cfg := serviceConfig(t, buf)
	cfg.Port, cfg.MetricsAddr = port, taken.Addr().String()
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "Cannot listen for metrics") {
		t.Fatalf("Start with a taken metrics address: %v", err)
	}
	recs := buf.records(t)
	last := recs[len(recs)-1]
	if last["kind"] != "boot-failed" || !strings.Contains(last["problems"].([]any)[0].(string), "address already in use") {
		t.Fatalf("last record %v", last)
	}
	again, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("the failed service kept its port: %v", err)
	}
	again.Close()

	buf = &lockedBuffer{}
	cfg = serviceConfig(t, buf)
	cfg.Service.Policy = filepath.Join(t.TempDir(), "no-such-policy.json")
	if _, err := Start(context.Background(), cfg); err == nil {
		t.Fatal("Start with a missing policy file did not fail")
	}
	if got := kinds(buf.records(t)); strings.Join(got, " ") != "boot-failed" {
		t.Fatalf("records %v", got)
	}
}

// TestServiceEnvironment: what pack code does not see of the process
// environment, and the required names that are missing, come from
// ServiceConfig.Environ alone.
func TestServiceEnvironment(t *testing.T) {
	buf := &lockedBuffer{}
	cfg := serviceConfig(t, buf)
	cfg.Service.Environ = []string{"PATH=/bin", "HOME=/root", "KINDGI_PACK_SERVICE_TOKEN=tok"}
	cfg.MetricsAddr = "off"
	svc, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = svc.Shutdown(context.Background())
	for _, r := range buf.records(t) {
		if r["kind"] == "env-dropped" {
			names, _ := json.Marshal(r["names"])
			if string(names) != `["HOME","KINDGI_PACK_SERVICE_TOKEN","PATH"]` || r["filter"] != "on" {
				t.Fatalf("env-dropped %v", r)
			}
			return
		}
	}
	t.Fatal("no env-dropped record")
}
