package service

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

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
	for _, l := range labels {
		m.PoolEvent(host.PoolEvent{Kind: l.Kind, Reason: l.Reason})
	}
	if n := testutil.CollectAndCount(m.poolEvents); n != len(labels) {
		t.Fatalf("%d series for %d labels", n, len(labels))
	}
	for _, l := range labels {
		if got := testutil.ToFloat64(m.poolEvents.WithLabelValues(string(l.Kind), string(l.Reason))); got != 1 {
			t.Errorf("event %q reason %q counted %v times", l.Kind, l.Reason, got)
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
