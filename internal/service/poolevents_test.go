package service

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/kindgi/packd/internal/host"
)

// TestPoolEventsAreCountedAndDocumented: every kind of pool event with
// each of its reasons (the sandbox's one list) is a series of
// packd_pool_events_total labelled with exactly those values, and
// docs/operations.md's row of that metric names every kind and reason.
func TestPoolEventsAreCountedAndDocumented(t *testing.T) {
	labels := host.PoolEventLabels()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, MetricsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Each is counted as often as it happens (the second and later times
	// through the series the first one found).
	for i, l := range labels {
		for range i + 1 {
			m.PoolEvent(host.PoolEvent{Kind: l.Kind, Reason: l.Reason})
		}
	}
	if n := testutil.CollectAndCount(m.poolEvents); n != len(labels) {
		t.Fatalf("%d series for %d labels", n, len(labels))
	}
	for i, l := range labels {
		if got := testutil.ToFloat64(m.poolEvents.WithLabelValues(string(l.Kind), string(l.Reason))); got != float64(i+1) {
			t.Errorf("event %q reason %q counted %v times, want %d", l.Kind, l.Reason, got, i+1)
		}
	}

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| `packd_pool_events_total` |") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/operations.md has no row for packd_pool_events_total")
	}
	for _, l := range labels {
		for _, v := range []string{string(l.Kind), string(l.Reason)} {
			if v != "" && !strings.Contains(row, "`"+v+"`") {
				t.Errorf("docs/operations.md's packd_pool_events_total row does not name %q", v)
			}
		}
	}
}

// TestCallHistogramsAreByTarget: a call's duration, fuel and memory are
// observed in its target's series, every call's (the series a target's
// first call finds serve the later ones), and a call without fuel or
// memory adds none.
func TestCallHistogramsAreByTarget(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry(), MetricsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		e := Event{Parsed: true, Face: "http", Outcome: "ok", Call: host.Call{Target: host.TargetTool, ID: "x"}, Usage: host.Usage{Fuel: 10, MemoryBytes: 1 << 20}}
		if i >= 3 {
			e.Target = host.TargetCheck
		}
		if i == 4 {
			e.Usage = host.Usage{}
		}
		m.OnCall(e)
	}
	for _, c := range []struct {
		name   string
		vec    *prometheus.HistogramVec
		target string
		want   uint64
	}{{"duration", m.duration, "tool", 3}, {"duration", m.duration, "check", 2}, {"fuel", m.fuel, "tool", 3},
		{"fuel", m.fuel, "check", 1}, {"memory", m.memory, "tool", 3}, {"memory", m.memory, "check", 1}} {
		var d dto.Metric
		if err := c.vec.WithLabelValues(c.target).(prometheus.Metric).Write(&d); err != nil {
			t.Fatal(err)
		}
		if got := d.GetHistogram().GetSampleCount(); got != c.want {
			t.Errorf("%s of %s: %d observations, want %d", c.name, c.target, got, c.want)
		}
	}
}
