package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	dto "github.com/prometheus/client_model/go"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

// operated is a server over the hostile test pack with metrics, a gate and
// hooks, as packd serve wires them.
type operated struct {
	s       *Server
	reg     *prometheus.Registry
	m       *service.Metrics
	log     *service.Log
	records *bytes.Buffer
}

type lockedBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Buffer.Write(p)
}

// text is what was written so far, safe beside writers.
func (l *lockedBuffer) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.String()
}

func newOperated(t *testing.T, gate host.Gate, hooks ...service.Hook) *operated {
	t.Helper()
	return newOperatedWith(t, gate, func(*service.Metrics, *service.Log) []service.Hook { return hooks })
}

// newOperatedWith is newOperated whose further hooks are made of its
// metrics and log.
func newOperatedWith(t *testing.T, gate host.Gate, more func(*service.Metrics, *service.Log) []service.Hook) *operated {
	t.Helper()
	p, _ := host.Load(context.Background(), host.Config{
		IndexPath: filepath.Join("..", "..", "testdata", "hostile", "index.json"), Gate: gate,
		Sandbox: host.SandboxConfig{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache")},
	})
	if p == nil {
		t.Fatal("the test pack did not load")
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	reg := prometheus.NewPedanticRegistry()
	m, err := service.NewMetrics(reg, service.MetricsConfig{Pack: p, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	buf := &lockedBuffer{}
	rec := service.NewLog(buf)
	s := newFace(t, service.Config{Pack: p, Log: rec, Metrics: m,
		Hooks: append([]service.Hook{service.CallLines(rec), m}, more(m, rec)...), TenantID: ""}, Config{})
	return &operated{s: s, reg: reg, m: m, log: rec, records: &buf.Buffer}
}

// metric is the value of the series of name whose labels are the
// name, value pairs given (0 when there is none): a counter's or gauge's
// value.
func metric(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func (o *operated) call(method, path, body string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("kindgi-pack-token", "tok")
	req.Header.Set("content-type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	o.s.Handler().ServeHTTP(rec, req)
	return rec
}

func invokeMsg(id, tenant string) string {
	return `{"v":2,"kind":"invoke","tool":{"id":"` + id + `"},"input":{"secretInput":"NOT-IN-LOGS"},"ctx":{"tenantId":"` + tenant + `","runId":"r","secrets":{"k":"NOT-IN-LOGS"}}}`
}

func TestMetricsCountCallsAndRefusals(t *testing.T) {
	o := newOperated(t, nil)
	o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t1"), "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t1"))
	o.call("POST", "/v1/invoke", invokeMsg("no.such.tool-"+strings.Repeat("x", 10), "t1"))
	o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t1"), "kindgi-pack-token", "bad")
	o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t1"), "content-type", "text/plain")

	if got := metric(t, o.reg, "packd_calls_total", "target", "tool", "id", "hostile.counter", "outcome", "ok"); got != 2 {
		t.Errorf("ok calls = %v", got)
	}
	if got := metric(t, o.reg, "packd_calls_total", "target", "tool", "id", "unknown", "outcome", "tool-not-in-pack"); got != 1 {
		t.Errorf("an unknown id must be labelled unknown: %v", got)
	}
	if got := metric(t, o.reg, "packd_refusals_total", "status", "401", "reason", "bad-token"); got != 1 {
		t.Errorf("401 refusals = %v", got)
	}
	if got := metric(t, o.reg, "packd_refusals_total", "status", "415", "reason", "content-type"); got != 1 {
		t.Errorf("415 refusals = %v", got)
	}
	if got := metric(t, o.reg, "packd_calls_in_flight"); got != 0 {
		t.Errorf("in flight after the calls = %v", got)
	}
	if n := testutil.CollectAndCount(o.reg, "packd_call_fuel"); n != 1 {
		t.Errorf("fuel histogram series = %d", n)
	}
	// The traced call left its trace id as an exemplar.
	mfs, err := o.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "packd_call_duration_seconds" {
			continue
		}
		for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
			if ex := b.GetExemplar(); ex != nil && ex.GetLabel()[0].GetValue() == "4bf92f3577b34da6a3ce929d0e0e4736" {
				found = true
			}
		}
	}
	if !found {
		t.Error("no trace id exemplar on packd_call_duration_seconds")
	}
	o.m.PoolEvent(host.PoolEvent{Kind: "reset", Seconds: 0.0001})
	o.m.PoolEvent(host.PoolEvent{Kind: "discard", Reason: "grown"})
	o.m.GuestLineDropped("stdout")
	if metric(t, o.reg, "packd_pool_events_total", "event", "discard", "reason", "grown") != 1 || testutil.CollectAndCount(o.reg, "packd_pool_reset_seconds") != 1 ||
		metric(t, o.reg, "packd_guest_lines_dropped_total", "stream", "stdout") != 1 {
		t.Error("pool events or dropped guest lines are not counted")
	}
	// Names and help pass the registry's own lint.
	if problems, err := testutil.GatherAndLint(o.reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	for _, name := range []string{"packd_build_info", "packd_pack_info", "packd_module_compile_seconds"} {
		if testutil.CollectAndCount(o.reg, name) == 0 {
			t.Errorf("%s missing", name)
		}
	}
}

func TestGateDenyIs403AndGateFailureIs503(t *testing.T) {
	policy := &host.Policy{Default: "allow", Tenants: map[string]host.TenantPolicy{"t-blocked": {Deny: []string{"hostile.*"}}}}
	broken := gateFunc(func(_ context.Context, r host.Call) error {
		if r.TenantID == "t-broken" {
			return errors.New("policy store 10.1.2.3 unreachable")
		}
		return nil
	})
	o := newOperated(t, host.Gates(policy, broken))
	r := o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t-blocked"))
	if r.Code != 403 || r.Body.String() != `{"error":"The policy does not allow this tenant to call hostile.counter","code":"pack-gate-denied"}` {
		t.Fatalf("deny: %d %s", r.Code, r.Body)
	}
	r = o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t-broken"))
	if r.Code != 503 || r.Header().Get("Retry-After") != "1" || strings.Contains(r.Body.String(), "10.1.2.3") ||
		r.Body.String() != `{"error":"the gate could not decide","code":"pack-gate-failed"}` {
		t.Fatalf("gate failure: %d %s", r.Code, r.Body)
	}
	if !strings.Contains(o.records.String(), `"kind":"gate-failed"`) {
		t.Error("the gate failure was not recorded")
	}
	if got := metric(t, o.reg, "packd_calls_total", "target", "tool", "id", "hostile.counter", "outcome", "pack-gate-denied"); got != 1 {
		t.Errorf("denied calls = %v", got)
	}
	if r := o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t-ok")); r.Code != 200 {
		t.Fatalf("allowed: %d %s", r.Code, r.Body)
	}
}

type gateFunc func(context.Context, host.Call) error

func (f gateFunc) Check(ctx context.Context, r host.Call) error { return f(ctx, r) }

func TestAHookThatPanicsCannotFailTheCall(t *testing.T) {
	var after int
	o := newOperated(t, nil, service.HookFunc(func(service.Event) { panic("hook bug") }), service.HookFunc(func(service.Event) { after++ }))
	r := o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t1"))
	if r.Code != 200 || r.Body.String() != `{"v":2,"kind":"result","output":{"global":1,"memory":1}}` {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	if metric(t, o.reg, "packd_hook_panics_total") != 1 || after != 1 {
		t.Fatalf("panics %v, later hooks ran %d times", metric(t, o.reg, "packd_hook_panics_total"), after)
	}
}

func TestAuditLogRecordsEveryDispatchAndNothingSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	var audit *service.AuditLog
	policy := &host.Policy{Tenants: map[string]host.TenantPolicy{"t-blocked": {Allow: []string{"other.*"}}}}
	o := newOperatedWith(t, policy, func(m *service.Metrics, _ *service.Log) []service.Hook {
		var err error
		if audit, err = service.OpenAuditLog(path, m, nil); err != nil {
			t.Fatal(err)
		}
		return []service.Hook{audit}
	})
	o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t1"), "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t-blocked"))
	o.call("POST", "/v1/invoke", invokeMsg("nope", "t1"))
	o.call("POST", "/v1/invoke", `{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"input":[],"ctx":{"tenantId":"t1","runId":"r"}}`)
	o.call("POST", "/v1/invoke", `not json`) // not a dispatch: no row
	if err := audit.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d audit lines:\n%s", len(lines), data)
	}
	want := []string{"ok", "pack-gate-denied", "tool-not-in-pack", "input-validation-failed"}
	for i, l := range lines {
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatal(err)
		}
		if row["outcome"] != want[i] || row["artifactVersion"] != "hostile-1.0.0" || row["runId"] != "r" {
			t.Errorf("row %d: %s", i, l)
		}
		if strings.Contains(l, "NOT-IN-LOGS") || strings.Contains(l, "secretInput") {
			t.Errorf("row %d holds input or secrets: %s", i, l)
		}
	}
	if !strings.HasPrefix(lines[0], `{"time":"`) || !strings.Contains(lines[0], `"tenantId":"t1","runId":"r","face":"http","target":"tool","toolId":"hostile.counter","version":"1.0.0","outcome":"ok","status":200,`) ||
		!strings.HasSuffix(lines[0], `,"artifactVersion":"hostile-1.0.0","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`) {
		t.Errorf("row layout: %s", lines[0])
	}
	if !strings.Contains(lines[1], `"status":403`) {
		t.Errorf("deny row: %s", lines[1])
	}
}

func TestAuditLogSurvivesAFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatal("this test needs /dev/full (Linux)")
	}
	var audit *service.AuditLog
	o := newOperatedWith(t, nil, func(m *service.Metrics, log *service.Log) []service.Hook {
		var err error
		if audit, err = service.OpenAuditLog("/dev/full", m, log); err != nil {
			t.Fatal(err)
		}
		return []service.Hook{audit}
	})
	for i := 0; i < 3; i++ {
		if r := o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t1")); r.Code != 200 {
			t.Fatalf("call %d: %d", i, r.Code)
		}
	}
	_ = audit.Close(t.Context())
	if got := testutil.ToFloat64(o.m.AuditErrors); got != 3 {
		t.Errorf("audit write errors = %v", got)
	}
	if !strings.Contains(o.records.String(), `"kind":"audit-error"`) {
		t.Error("no audit-error record")
	}
}

func TestDescribe(t *testing.T) {
	o := newOperated(t, nil)
	r := o.call("GET", "/v1/tools/hostile.counter", "")
	if r.Code != 200 || r.Body.String() != `{"verb":"hostile.counter","pack":"hostile","description":"","category":"tool","params":[]}` {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	if r := o.call("GET", "/v1/tools/nope", ""); r.Code != 404 || r.Body.String() != `{"error":"No tool nope"}` {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	if r := o.call("GET", "/v1/tools/hostile.counter", "", "kindgi-pack-token", "bad"); r.Code != 401 {
		t.Fatalf("no token: %d", r.Code)
	}
	if r := o.call("POST", "/v1/tools/hostile.counter", ""); r.Code != 405 {
		t.Fatalf("POST: %d", r.Code)
	}
	if strings.Contains(o.records.String(), `"kind":"call"`) {
		t.Error("describe wrote a call record")
	}
}

func TestDescribeParamsFromTheInputSchema(t *testing.T) {
	p, err := host.Load(context.Background(), host.Config{IndexPath: filepath.Join("..", "..", "wasm-examples", "conformance", "index.json"),
		Sandbox: host.SandboxConfig{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache")}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	s := newFace(t, service.Config{Pack: p}, Config{})
	req := httptest.NewRequest("GET", "/v1/tools/conformance.defaults?version=1.0.0", nil)
	req.Header.Set("kindgi-pack-token", "tok")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	// in the schema's order (the canonical index sorts its keys)
	want := `{"verb":"conformance.defaults","pack":"conformance","description":"","category":"tool","params":[` +
		`{"name":"greeting","type":"string","required":false,"description":""},` +
		`{"name":"name","type":"string","required":true,"description":""},` +
		`{"name":"options","type":"object","required":false,"description":""}]}`
	if rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// TestAGateRefusalWithAnUnknownCodeFailsClosed: a gate that refuses with a
// code this service does not know is a gate that could not decide (503,
// recorded), not a silent 403 with a made-up code.
func TestAGateRefusalWithAnUnknownCodeFailsClosed(t *testing.T) {
	o := newOperated(t, gateFunc(func(context.Context, host.Call) error {
		return &host.Deny{Code: "made-up", Reason: "no"}
	}))
	r := o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t1"))
	if r.Code != 503 || r.Header().Get("Retry-After") != "1" || r.Body.String() != `{"error":"The call could not be checked","code":"pack-gate-failed"}` {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	if !strings.Contains(o.records.String(), `unknown code \"made-up\"`) {
		t.Errorf("not recorded: %s", o.records.String())
	}
	if got := metric(t, o.reg, "packd_refusals_total", "status", "503", "reason", "pack-gate-failed"); got != 1 {
		t.Errorf("503 refusals = %v", got)
	}
}

// TestEveryHostRefusalHasItsRow: each refusal code host can return has a
// row in the refusal table, whose reason is the code.
func TestEveryHostRefusalHasItsRow(t *testing.T) {
	for _, code := range []string{host.RefusalTenantMismatch, host.RefusalGateDenied, host.RefusalGateFailed, host.RefusalOverloaded, host.RefusalTenantShare} {
		r, ok := refusals[code]
		if !ok || r.status == 0 {
			t.Errorf("%s: %+v %v", code, r, ok)
		}
	}
}

// TestATenantPinCannotBeHalfWired: a server pinned to a tenant refuses a
// call whose header names it but whose ctx.tenantId names another, with
// no other wiring (the pack was loaded without a gate).
func TestATenantPinCannotBeHalfWired(t *testing.T) {
	p := testPack(t)
	s := newFace(t, service.Config{Pack: p, TenantID: "t1"}, Config{})
	req := httptest.NewRequest("POST", "/v1/invoke", strings.NewReader(invokeMsg("hostile.counter", "t2")))
	req.Header.Set("kindgi-pack-token", "tok")
	req.Header.Set("content-type", "application/json")
	req.Header.Set("kindgi-tenant-id", "t1")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 421 || !strings.Contains(rec.Body.String(), `"code":"pack-tenant-mismatch"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	req = httptest.NewRequest("POST", "/v1/invoke", strings.NewReader(invokeMsg("hostile.counter", "t1")))
	req.Header.Set("kindgi-pack-token", "tok")
	req.Header.Set("content-type", "application/json")
	req.Header.Set("kindgi-tenant-id", "t1")
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("the pinned tenant: %d %s", rec.Code, rec.Body)
	}
}

// TestMetricsNeedNotBeGivenTwice: a server given Metrics counts every call
// without the metrics also being in Hooks, and counts it once when they are.
func TestMetricsNeedNotBeGivenTwice(t *testing.T) {
	for _, inHooks := range []bool{false, true} {
		p := testPack(t)
		reg := prometheus.NewPedanticRegistry()
		m, err := service.NewMetrics(reg, service.MetricsConfig{Pack: p, Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		cfg := service.Config{Pack: p, Metrics: m}
		if inHooks {
			cfg.Hooks = []service.Hook{m}
		}
		s := newFace(t, cfg, Config{})
		req := httptest.NewRequest("POST", "/v1/invoke", strings.NewReader(invokeMsg("hostile.counter", "t1")))
		req.Header.Set("kindgi-pack-token", "tok")
		req.Header.Set("content-type", "application/json")
		s.Handler().ServeHTTP(httptest.NewRecorder(), req)
		if got := metric(t, reg, "packd_calls_total", "target", "tool", "id", "hostile.counter", "outcome", "ok"); got != 1 {
			t.Errorf("metrics in hooks %v: %v calls counted, want 1", inHooks, got)
		}
	}
}

// TestACallEndingAfterTheAuditLogClosedIsCountedNotAPanic: a late call
// (past the drain's timeout) ends after the audit log closed: its line is
// counted as dropped, and no hook panics.
func TestACallEndingAfterTheAuditLogClosedIsCountedNotAPanic(t *testing.T) {
	var audit *service.AuditLog
	o := newOperatedWith(t, nil, func(m *service.Metrics, _ *service.Log) []service.Hook {
		var err error
		if audit, err = service.OpenAuditLog(filepath.Join(t.TempDir(), "audit.log"), m, nil); err != nil {
			t.Fatal(err)
		}
		return []service.Hook{audit}
	})
	_ = audit.Close(t.Context())
	if r := o.call("POST", "/v1/invoke", invokeMsg("hostile.counter", "t1")); r.Code != 200 {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	if got := metric(t, o.reg, "packd_hook_panics_total"); got != 0 {
		t.Errorf("hook panics = %v", got)
	}
	if got := testutil.ToFloat64(o.m.AuditDropped); got != 1 {
		t.Errorf("audit lines dropped = %v", got)
	}
}
