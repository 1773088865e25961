package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

func segmentRecord(id, snapshot string) *Record {
	r := &Record{Format: Format, RecordedAt: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), Target: "tool", ID: id,
		Module: Module{Path: "m.wasm", SHA256: "sha256:00"}, Instance: sandbox.InstanceFresh,
		Tape: []sandbox.TapeAnswer{}, Result: Result{Output: Bytes(`{"ok":true}`)}}
	if snapshot != "" {
		r.Instance = sandbox.InstanceHit
		r.Snapshot = &Snapshot{ID: snapshot, Tape: []sandbox.TapeAnswer{{Import: "random_get", Arg: 8, Value: []byte("12345678"), Fuel: 7}}}
	}
	return r
}

// TestSegmentsRoundTrip: records appended to a segment read back as they
// were, a snapshot's tape written once however many records name it; a
// record past the room given is ErrNoRoom and adds nothing.
func TestSegmentsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := CreateSegment(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := []*Record{segmentRecord("a", "sha256:s1"), segmentRecord("b", "sha256:s1"), segmentRecord("c", ""), segmentRecord("d", "sha256:s2")}
	for _, r := range want {
		if _, err := s.Append(r, -1); err != nil {
			t.Fatal(err)
		}
	}
	held := s.Size()
	if _, err := s.Append(segmentRecord("e", "sha256:s3"), 10); !errors.Is(err, ErrNoRoom) {
		t.Fatalf("a record past its room: %v", err)
	}
	big := segmentRecord("f", "sha256:s4")
	big.max = 1
	big.Result.Output = Bytes(strings.Repeat("x", OverheadBytes+10))
	if _, err := s.Append(big, -1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a record past its bound: %v", err)
	}
	if s.Size() != held || s.snaps["sha256:s3"] || s.snaps["sha256:s4"] {
		t.Fatalf("a refused record left %d bytes, snapshots %v", s.Size()-held, s.snaps)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(s.path)
	if n := strings.Count(string(b), `"packdSnapshot":1`); n != 2 || strings.Count(string(b), "\n") != 6 {
		t.Fatalf("%d snapshot lines in %d lines:\n%s", n, strings.Count(string(b), "\n"), b)
	}
	var got []*Record
	for r := range ReadSegment(bytes.NewReader(b), 1<<20) {
		if r.Err != nil {
			t.Fatalf("line %d: %v", r.Line, r.Err)
		}
		got = append(got, r.Record)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records read, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].Snapshot, want[i].Snapshot) || got[i].ID != want[i].ID || string(got[i].Result.Output) != string(want[i].Result.Output) {
			t.Errorf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if filepath.Dir(s.path) != dir || !strings.HasSuffix(s.path, SegmentExt) {
		t.Errorf("segment at %s", s.path)
	}
}

// TestSegmentsReadWhatIsWhole: a reader skips a last line still being
// written, names a record whose snapshot the segment lacks and a line of
// no record by their lines, and stops at a line over its bound.
func TestSegmentsReadWhatIsWhole(t *testing.T) {
	var b bytes.Buffer
	s := &Segment{snaps: map[string]bool{}}
	_, _ = s.Append(segmentRecord("a", "sha256:s1"), -1)
	b.Write(s.buf)
	orphan, _ := s.appendLine(nil, segmentRecord("b", "sha256:gone"))
	b.Write(orphan)
	b.WriteString("{\"packdSnapshot\":1}\n")
	b.WriteString("not json\n")
	b.WriteString(`{"packdRecord":1,"id":"half`)
	var lines []string
	for r := range ReadSegment(bytes.NewReader(b.Bytes()), 1<<20) {
		if r.Err != nil {
			lines = append(lines, r.Err.Error())
		} else {
			lines = append(lines, r.Record.ID)
		}
	}
	want := []string{"a", "the record's snapshot sha256:gone is not in the segment before it", "not a snapshot line of format 1", "not a packd record: invalid character 'o' in literal null (expecting 'u')"}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("read %q\nwant %q", lines, want)
	}
	long := strings.Repeat("x", 300) + "\n" + "{}\n"
	var errs []error
	for r := range ReadSegment(strings.NewReader(long), 100) {
		errs = append(errs, r.Err)
	}
	if len(errs) != 1 || errs[0] == nil || !strings.Contains(errs[0].Error(), "longer than a record can be") {
		t.Fatalf("a long line: %v", errs)
	}
}

// TestASegmentCannotHoldEndlessSnapshots: a hostile segment of more
// snapshot lines than a service writes is refused past the bound, line
// by line, without holding their tapes.
func TestASegmentCannotHoldEndlessSnapshots(t *testing.T) {
	var b strings.Builder
	for i := range maxSegmentSnapshots + 3 {
		fmt.Fprintf(&b, "{\"packdSnapshot\":1,\"id\":\"sha256:%d\",\"tape\":[]}\n", i)
	}
	var errs int
	for r := range ReadSegment(strings.NewReader(b.String()), 1<<20) {
		if r.Err == nil || !strings.Contains(r.Err.Error(), "more snapshots than a segment holds") {
			t.Fatalf("line %d: %v", r.Line, r.Err)
		}
		errs++
	}
	if errs != 3 {
		t.Fatalf("%d lines refused, want 3", errs)
	}
}

// TestASegmentLineIsTheRecordsJSON: the line a segment holds for a record
// says what encoding/json says of it (the snapshot by id aside), for a
// record whose bulk is appended apart and for one that goes the slow way
// (bytes that are not UTF-8, a request with line breaks).
func TestASegmentLineIsTheRecordsJSON(t *testing.T) {
	fast := segmentRecord("a", "sha256:s1")
	fast.Request = []byte(`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{"m":"h\u00e9 \"q\"\\n"},"ctx":{"tenantId":"t","runId":"r"}}`)
	fast.GuestRequest = Bytes("{\"kind\":\"invoke\",\"input\":\"\u2028<&>\"}")
	fast.Tape = []sandbox.TapeAnswer{{Import: "http_request", Arg: 99, Detail: "GET https \"x\"", Value: []byte{0, 1, 2, 255}, Fuel: 12}, {Import: "random_get", Arg: 0, Value: []byte{}, Fuel: -1}, {Import: "x", Value: nil}}
	fast.Result = Result{Status: 1, Output: Bytes("thrown \n\t"), Error: "boom", Fuel: 5}
	// Every field set, so that one the hand encoder forgot differs.
	fast.PackID, fast.ArtifactVersion, fast.Version = "p\"k", "v-1", "1.0.0"
	fast.Limits = sandbox.GuestLimits{MemoryLimitPages: 1, MaxResponseBytes: 2, MaxTableElements: 3, MaxStackBytes: 4, LoadFuel: 5, DefaultFuel: 6}
	fast.CallLimits = sandbox.CallLimits{Fuel: 77, MemoryLimit: 88}
	fast.Env = []string{"A", "B\u00e9"}
	fast.Secrets = []Secret{{Name: "ctx.secrets.k", SHA256: "sha256:1", Length: 3}}
	fast.Redactions = []Redaction{{In: "output", Offset: 1, Length: 3, Secret: "ctx.secrets.k", Form: "raw"}}
	if v := reflect.ValueOf(*fast); true {
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && v.Field(i).IsZero() {
				t.Fatalf("the test record leaves %s unset", f.Name)
			}
		}
	}
	slow := segmentRecord("b", "")
	slow.Request = []byte("{\n  \"v\": 2\n}")
	slow.GuestRequest = Bytes{0xff, 0xfe}
	seg := &Segment{snaps: map[string]bool{}}
	plainEnv := segmentRecord("c", "")
	plainEnv.Env = nil
	for _, r := range []*Record{fast, slow, plainEnv, fast} {
		line, err := seg.appendLine(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		rest := *r
		if r.Snapshot != nil {
			rest.Snapshot = &Snapshot{ID: r.Snapshot.ID}
		}
		want, _ := json.Marshal(&rest)
		var got, wantV map[string]any
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("%s: the line is not JSON: %v\n%s", r.ID, err, line)
		}
		_ = json.Unmarshal(want, &wantV)
		if s, ok := wantV["snapshot"].(map[string]any); ok {
			delete(s, "tape") // the line names the snapshot by id alone
		}
		if !reflect.DeepEqual(got, wantV) {
			t.Fatalf("%s:\n%s\nwant\n%s", r.ID, line, want)
		}
		if bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("%s: not one line: %q", r.ID, line)
		}
	}
}
