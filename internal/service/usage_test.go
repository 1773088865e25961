package service

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kindgi/packd/internal/host"
)

// usageTotals is what a tenant's lines add up to.
type usageTotals struct {
	Calls, Fuel, CPUMicros, MemoryKiBMs, EgressRequests, EgressBytes int64
	Outcomes                                                         map[string]int64
}

// TestUsageLogSumsTheAuditLinesExactly: over 10,000 calls of 50 tenants
// (some refused by their budgets), the usage log's lines, interval after
// interval, add up per tenant to exactly what the audit lines of the same
// calls add up to: calls, calls by outcome, fuel, CPU time, memory × time
// and egress.
func TestUsageLogSumsTheAuditLinesExactly(t *testing.T) {
	dir := t.TempDir()
	p, _ := host.Load(context.Background(), host.Config{
		IndexPath: filepath.Join("..", "..", "testdata", "hostile", "index.json"),
		Sandbox:   host.SandboxConfig{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache"), PoolSize: 4},
	})
	if p == nil {
		t.Fatal("the test pack did not load")
	}
	defer p.Close(context.Background())
	audit, err := OpenAuditLog(filepath.Join(dir, "audit.jsonl"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	usage, err := openUsageLog(filepath.Join(dir, "usage.jsonl"), 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	policy := &host.Policy{Tenants: map[string]host.TenantPolicy{}}
	for i := range 5 { // a call each, then refusals
		policy.Tenants[fmt.Sprint("t", i)] = host.TenantPolicy{Budget: &host.Budget{CallsPerSecond: 0.001}}
	}
	s, err := New(Config{Pack: p, Hooks: []Hook{audit, usage}, Policy: policy, TenantSharePause: -1})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 10_000; i += 8 {
				body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"input":{},"ctx":{"tenantId":"t%d","runId":"r"}}`, i%50)
				a := s.Call(context.Background(), Request{Body: func() ([]byte, *Refusal) { return []byte(body), nil }, Face: testFace{}})
				a.Done()
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Close(ctx)
	if err := audit.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := usage.Close(ctx); err != nil {
		t.Fatal(err)
	}

	fromAudit, fromUsage := map[string]*usageTotals{}, map[string]*usageTotals{}
	add := func(m map[string]*usageTotals, tenant string) *usageTotals {
		if m[tenant] == nil {
			m[tenant] = &usageTotals{Outcomes: map[string]int64{}}
		}
		return m[tenant]
	}
	micros := func(ms float64) int64 { return int64(math.Round(ms * 1000)) }
	lines := 0
	readLines(t, filepath.Join(dir, "audit.jsonl"), func(l map[string]any) {
		u := add(fromAudit, l["tenantId"].(string))
		u.Calls++
		u.Outcomes[l["outcome"].(string)]++
		u.Fuel += int64(l["fuel"].(float64))
		u.CPUMicros += micros(l["cpuMs"].(float64))
		u.MemoryKiBMs += int64(l["memoryKiBMs"].(float64))
		u.EgressRequests += int64(l["egressRequests"].(float64))
		u.EgressBytes += int64(l["egressBytes"].(float64))
	})
	readLines(t, filepath.Join(dir, "usage.jsonl"), func(l map[string]any) {
		lines++
		u := add(fromUsage, l["tenantId"].(string))
		u.Calls += int64(l["calls"].(float64))
		for k, v := range l["outcomes"].(map[string]any) {
			u.Outcomes[k] += int64(v.(float64))
		}
		u.Fuel += int64(l["fuel"].(float64))
		u.CPUMicros += micros(l["cpuMs"].(float64))
		u.MemoryKiBMs += int64(l["memoryKiBMs"].(float64))
		u.EgressRequests += int64(l["egressRequests"].(float64))
		u.EgressBytes += int64(l["egressBytes"].(float64))
	})
	if len(fromAudit) != 50 || lines <= 50 {
		t.Fatalf("%d tenants in the audit log, %d usage lines: want 50, and lines over several intervals", len(fromAudit), lines)
	}
	var calls, refused, fuel int64
	for tenant, a := range fromAudit {
		u := fromUsage[tenant]
		a1, _ := json.Marshal(a)
		u1, _ := json.Marshal(u)
		if string(a1) != string(u1) {
			t.Errorf("%s: the audit lines add up to %s, the usage lines to %s", tenant, a1, u1)
		}
		calls += a.Calls
		refused += a.Outcomes[CodeTenantBudget]
		fuel += a.Fuel
	}
	if calls != 10_000 || refused != 5*200-5 || fuel == 0 {
		t.Errorf("%d calls, %d refused for their budgets, %d fuel: want 10,000, 995 and some", calls, refused, fuel)
	}
}

func readLines(t *testing.T, path string, each func(map[string]any)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		each(l)
	}
}

// TestUsageLogBoundsItsTenants: past maxUsageTenants tenants in an
// interval, the others' calls are summed in one line that says how many
// tenants it holds; Reopen writes on in a new file.
func TestUsageLogBoundsItsTenants(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "usage.jsonl")
	u, err := openUsageLog(path, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxUsageTenants + 7 {
		u.OnCall(Event{Call: host.Call{Correlation: host.Correlation{TenantID: fmt.Sprint("tenant-", i)}}, Outcome: "ok", Usage: host.Usage{Fuel: 10, CPUSeconds: 0.0000215}})
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := u.Reopen(); err != nil {
		t.Fatal(err)
	}
	if err := u.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != maxUsageTenants+1 {
		t.Fatalf("%d lines, want %d", len(lines), maxUsageTenants+1)
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, `"otherTenants":7,`) || !strings.Contains(last, `"calls":7,`) || !strings.Contains(last, `"fuel":70,`) ||
		!strings.Contains(last, `"cpuMs":0.154,`) || strings.Contains(last, "tenantId") {
		t.Fatalf("the others' line: %s", last)
	}
	if !strings.Contains(lines[0], `"cpuMs":0.022,`) {
		t.Fatalf("a tenant's line: %s", lines[0])
	}
}

// TestTenantUsageMetrics: with the tenant label on, what each tenant's
// calls used is counted by tenant and resource; without it, no such
// series exists (its cardinality is the tenants').
func TestTenantUsageMetrics(t *testing.T) {
	for _, on := range []bool{true, false} {
		reg := prometheus.NewRegistry()
		m, err := NewMetrics(reg, MetricsConfig{TenantLabel: on})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			m.OnCall(Event{Call: host.Call{Target: host.TargetTool, ID: "x", Correlation: host.Correlation{TenantID: "acme"}}, Outcome: "ok",
				Usage: host.Usage{Fuel: 1000, CPUSeconds: 0.5, MemoryBytes: 2 << 20, Egress: host.EgressSummary{Requests: 2, BytesSent: 10, BytesReceived: 30}}})
		}
		got := map[string]float64{}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "packd_tenant_usage_total" {
				continue
			}
			for _, s := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range s.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				got[labels["tenant"]+"/"+labels["resource"]] = s.GetCounter().GetValue()
			}
		}
		want := map[string]float64{"acme/fuel": 3000, "acme/cpu_seconds": 1.5, "acme/memory_byte_seconds": 3 << 20, "acme/egress_requests": 6, "acme/egress_bytes": 120}
		if !on {
			want = map[string]float64{}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("tenant label %v: %v, want %v", on, got, want)
		}
	}
}
