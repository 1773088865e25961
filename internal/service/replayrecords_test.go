package service

import (
	"bytes"
	"fmt"
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
// bound, the files already there counted (in the 4 KiB blocks a file
// system keeps them in); a record past it is not written, and counted
// full, as a record skipped is counted by why and a record kept after
// Close is counted dropped; a replay-record-lost record says so once.
// Records are appended to a segment (records-….jsonl), whole lines, read
// back by replay.ReadSegment.
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
			Module: replay.Module{Path: "m.wasm", SHA256: "sha256:00"}, Instance: "fresh", Result: replay.Result{Output: replay.Bytes(strings.Repeat("o", 3000))}}
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
	if len(names) != 2 || names[0] != "old.json" || !strings.HasPrefix(names[1], "records-") || !strings.HasSuffix(names[1], replay.SegmentExt) {
		t.Fatalf("the directory holds %v", names)
	}
	f, err := os.Open(filepath.Join(dir, names[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []*replay.Record
	for r := range replay.ReadSegment(f, 1<<20) {
		if r.Err != nil {
			t.Fatalf("line %d: %v", r.Line, r.Err)
		}
		got = append(got, r.Record)
	}
	if len(got) != 1 || got[0].ID != "a/../../escape" || got[0].ArtifactVersion != "v1" {
		t.Fatalf("the records written: %+v", got)
	}
	if n := strings.Count(log.String(), `"kind":"replay-record-lost"`); n != 1 {
		t.Fatalf("%d replay-record-lost records:\n%s", n, log.String())
	}
}

// BenchmarkReplayRecordsWriter: how many records of a pooled echo's size
// (a snapshot named by id, a 3 KB snapshot tape once per segment) the
// writer appends a second: the rate below which --record loses none
// (docs/replay.md). One op is one record written.
func BenchmarkReplayRecordsWriter(b *testing.B) {
	d, err := OpenReplayRecords(b.TempDir(), 0, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	// A record as the host makes one, read from its JSON (service sees
	// the sandbox's types only through host and replay).
	var tape strings.Builder
	for i := range 60 {
		if i > 0 {
			tape.WriteByte(',')
		}
		fmt.Fprintf(&tape, `{"import":"clock_time_get","arg":1,"value":"MTIzNDU2Nzg=","fuel":%d}`, i*4000)
	}
	one := `{"packdRecord":1,"recordedAt":"2026-12-05T12:41:47.361149282Z","packId":"echo","target":"tool","id":"echo.echo","version":"1.0.0",` +
		`"request":{"v":2,"kind":"invoke","tool":{"id":"echo.echo"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}},` +
		`"module":{"path":"echo.wasm","sha256":"sha256:77f269cb41a38541dcf17cb8c0bd98cc01bee2652ac30923ac84440eecba2f5b"},"limits":{"memoryLimitPages":4096},"fuel":10000000000,"instance":"hit","env":[],` +
		`"guestRequest":"{\"kind\":\"invoke\",\"tool\":{\"id\":\"echo.echo\",\"version\":\"1.0.0\"},\"input\":{\"message\":\"hello\"},\"ctx\":{\"tenantId\":\"t\",\"runId\":\"r\"}}",` +
		`"tape":[],"result":{"status":0,"output":"{\"message\":\"hello\"}","fuel":111351},"snapshot":{"id":"sha256:8d67e90731b57f0ac59f7317955c768eca34f92e0da27b72722a07255edec3fd","tape":[` + tape.String() + `]}}`
	base, err := replay.Read([]byte(one))
	if err != nil {
		b.Fatal(err)
	}
	rec := func() *replay.Record { r := *base; return &r }
	b.ResetTimer()
	for range b.N {
		d.write(rec())
	}
	d.finish()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestARecordIsWrittenSoonAfterTheQueueEmpties: a record is on disk, whole,
// shortly after the writer finds its queue empty (flushAfter), without the
// service stopping, and counted written.
func TestARecordIsWrittenSoonAfterTheQueueEmpties(t *testing.T) {
	dir := t.TempDir()
	m, err := NewMetrics(prometheus.NewRegistry(), MetricsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenReplayRecords(dir, 0, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(d, 5*time.Second)
	d.Keep(&replay.Record{Format: replay.Format, RecordedAt: time.Now(), Target: "tool", ID: "soon",
		Module: replay.Module{Path: "m.wasm", SHA256: "sha256:00"}, Instance: "fresh"}, "", "v1")
	deadline := time.Now().Add(10 * time.Second) // the test's own bound; flushAfter is 20 ms
	for {
		written := testutil.ToFloat64(m.replayRecords.WithLabelValues("written"))
		segments, _ := filepath.Glob(filepath.Join(dir, "*"+replay.SegmentExt))
		if len(segments) == 1 && written == 1 {
			if b, _ := os.ReadFile(segments[0]); bytes.Contains(b, []byte(`"id":"soon"`)) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after it was kept, the service still running: %d segments, %v written", len(segments), written)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
