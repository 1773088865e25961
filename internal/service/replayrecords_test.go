package service

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/replay"
)

// TestReplayRecordsAreBounded: the record directory holds at most its
// bound, the files already there counted; a record past it is not
// written, and counted full, as a record skipped is counted by why and a
// record kept after Close is counted dropped; a replay-record-lost record
// says so once. Every record written is a whole file, never a temporary.
// Files count in the 4 KiB blocks a file system keeps them in, not their
// bytes (5.0 MiB of records took 7.0 MiB of disk): the 1,000-byte file
// and a record of some 600 bytes take 8 KiB of a 10 KiB bound, and a
// second record would pass it.
func TestReplayRecordsAreBounded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old.json"), bytes.Repeat([]byte("x"), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(prometheus.NewRegistry(), MetricsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id string) *replay.Record {
		return &replay.Record{Format: replay.Format, RecordedAt: time.Now(), Target: "tool", ID: id,
			Module: replay.Module{Path: "m.wasm", SHA256: "sha256:00"}, Instance: "fresh", Result: replay.Result{Output: replay.Bytes(strings.Repeat("o", 300))}}
	}
	var log bytes.Buffer
	d, err := OpenReplayRecords(dir, 10<<10, m, NewLog(&log))
	if err != nil {
		t.Fatal(err)
	}
	d.Keep(rec("a/../../escape"), "", "v1")
	d.Keep(rec("b"), "", "v1")
	d.Keep(nil, host.RecordTooLarge, "v1")
	closeWithin(d, 5*time.Second)
	d.Keep(rec("c"), "", "v1")
	count := func(outcome string) float64 { return testutil.ToFloat64(m.replayRecords.WithLabelValues(outcome)) }
	if count("written") != 1 || count("full") != 1 || count("too-large") != 1 || count("dropped") != 1 {
		t.Fatalf("written %v, full %v, too-large %v, dropped %v", count("written"), count("full"), count("too-large"), count("dropped"))
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 || !strings.Contains(names[0], "-a_.._.._escape-") || !strings.HasSuffix(names[0], ".json") {
		t.Fatalf("the directory holds %v", names)
	}
	b, _ := os.ReadFile(filepath.Join(dir, names[0]))
	r, err := replay.Read(b)
	if err != nil || r.ArtifactVersion != "v1" {
		t.Fatalf("the record written: %v %+v", err, r)
	}
	if n := strings.Count(log.String(), `"kind":"replay-record-lost"`); n != 1 {
		t.Fatalf("%d replay-record-lost records:\n%s", n, log.String())
	}
}
