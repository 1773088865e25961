//go:build e2e

package main

// End-to-end checks against the real Prometheus tools (Debian's prometheus
// package): `make e2e`, which `make test` runs when they are installed.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startWithMetrics starts packd and returns the service and its metrics URL.
func startWithMetrics(t *testing.T) (*served, string) {
	t.Helper()
	s := start(t, conformance, nil)
	rec := record(t, s.stderr.waitFor(t, 5*time.Second, kindIs("listening")))
	port, ok := rec["metricsPort"].(float64)
	if !ok {
		t.Fatalf("no metricsPort on the listening record: %v", rec)
	}
	s.invoke(t, invokeBody("conformance.echo", "", `{"message":"m"}`, conformanceCtx),
		"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	s.invoke(t, invokeBody("conformance.throws", "", `{}`, conformanceCtx))
	s.do(t, "POST", "/v1/invoke", "{}", map[string]string{"kindgi-pack-token": "bad"})
	return s, fmt.Sprintf("http://127.0.0.1:%d/metrics", int(port))
}

func TestPromtoolChecksARealScrape(t *testing.T) {
	_, url := startWithMetrics(t)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`packd_calls_total{face="http",id="conformance.echo",outcome="ok",target="tool"} 1`,
		`packd_refusals_total{face="http",reason="bad-token",status="401"} 1`, "packd_build_info{", "packd_pack_info{", "go_goroutines", "process_cpu_seconds_total"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestPrometheusScrapesPackd(t *testing.T) {
	_, url := startWithMetrics(t)
	target := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: packd\n    static_configs:\n      - targets: ['%s']\n", target)), 0o644)
	port := freePort(t)
	prom := exec.Command("prometheus", "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	var log bytes.Buffer
	prom.Stdout, prom.Stderr = &log, &log
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = prom.Process.Kill()
		_ = prom.Wait()
	}()
	query := fmt.Sprintf("http://127.0.0.1:%d/api/v1/query?query=%s", port, "packd_calls_total%7Bid%3D%22conformance.echo%22%7D")
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		resp, err := http.Get(query)
		if err != nil {
			continue
		}
		var r struct {
			Status string
			Data   struct {
				Result []struct {
					Value []any
				}
			}
		}
		_ = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if r.Status == "success" && len(r.Data.Result) == 1 && r.Data.Result[0].Value[1] == "1" {
			return
		}
	}
	t.Fatalf("Prometheus never returned packd_calls_total for conformance.echo; its log:\n%s", log.String())
}

// TestPromtoolChecksTheDocumentedAlerts keeps the alert examples of
// docs/operations.md valid.
func TestPromtoolChecksTheDocumentedAlerts(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\ngroups:")
	rules, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no alert rules in docs/operations.md")
	}
	path := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(path, []byte("groups:"+rules), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("promtool", "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}
