package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox"
)

// TestATapeReplaysACallExactly: a call recorded on a tape (its clock
// readings, random bytes and poll wake-up) replays, pooled or fresh, to
// the same output and the same fuel, where a live call gets other bytes;
// a module that asks the host for something else in another order stops
// at the first host call that differs, and says which.
func TestATapeReplaysACallExactly(t *testing.T) {
	for _, pool := range []int{0, 2} {
		sb := newSandbox(t, sandbox.Config{PoolSize: pool})
		m := compile(t, sb, hostile("clockrand"))
		ctx := context.Background()
		tape := &sandbox.Tape{}
		rec, err := m.Call(ctx, sandbox.Request{Body: []byte("x"), Record: tape})
		if err != nil || len(rec.Body) != 40 {
			t.Fatalf("pool %d: the recorded call: %v %x", pool, err, rec.Body)
		}
		var imports []string
		for _, a := range tape.Answers {
			imports = append(imports, a.Import)
		}
		if got := strings.Join(imports, " "); got != "clock_time_get clock_time_get random_get poll_oneoff clock_time_get" || tape.Truncated {
			t.Fatalf("pool %d: the tape holds %s (truncated %v)", pool, got, tape.Truncated)
		}
		live, err := m.Call(ctx, sandbox.Request{Body: []byte("x")})
		if err != nil || bytes.Equal(live.Body, rec.Body) {
			t.Fatalf("pool %d: a live call answered what the recorded one did (%v): the fixture reads nothing that varies", pool, err)
		}
		for i := range 3 {
			tape.Rewind()
			rep, err := m.Call(ctx, sandbox.Request{Body: []byte("x"), Replay: tape, Fresh: i == 2})
			if err != nil || !bytes.Equal(rep.Body, rec.Body) || rep.FuelUsed != rec.FuelUsed || tape.Unserved() != 0 {
				t.Fatalf("pool %d, replay %d: %x (fuel %d), want %x (fuel %d); %d answers unserved; %v", pool, i, rep.Body, rep.FuelUsed, rec.Body, rec.FuelUsed, tape.Unserved(), err)
			}
		}
		tape.Rewind()
		_, err = compile(t, sb, hostile("clockrand2")).Call(ctx, sandbox.Request{Body: []byte("x"), Replay: tape})
		var div *sandbox.DivergenceError
		if !errors.As(err, &div) || div.At != 0 || div.Want != "clock_time_get(0) of 8 bytes" || div.Got != "random_get(16) of 16 bytes" || div.Fuel <= 0 {
			t.Fatalf("pool %d: a module that draws before it reads the clock, replayed: %v", pool, err)
		}
	}
}

// TestATapeReplaysOutboundRequests: an outbound request's answer and body
// are on the tape, the request by its method, scheme, host and a hash of
// the rest (never its path or query); replayed, the call gets them
// without reaching the egress at all, to the same output and fuel; a
// replay that asks for another URL diverges there, naming both.
func TestATapeReplaysOutboundRequests(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 2}), hostile("httpabi"))
	ctx := context.Background()
	eg := &fakeEgress{}
	tape := &sandbox.Tape{}
	req := []byte(`c{"method":"POST","url":"http://api.test/x?token=NOT-ON-TAPE"}`)
	rec, err := m.Call(ctx, sandbox.Request{Body: req, Egress: eg, Record: tape})
	if err != nil || len(tape.Answers) != 1 || !strings.HasPrefix(tape.Answers[0].Detail, "POST http://api.test #") || strings.Contains(tape.Answers[0].Detail, "/x") {
		t.Fatalf("recorded %q: %v, %+v", rec.Body, err, tape.Answers)
	}
	tape.Rewind()
	rep, err := m.Call(ctx, sandbox.Request{Body: req, Egress: eg, Replay: tape})
	if err != nil || string(rep.Body) != string(rec.Body) || rep.FuelUsed != rec.FuelUsed || len(eg.urls) != 1 {
		t.Fatalf("replayed %q (fuel %d), want %q (fuel %d); the egress saw %v; %v", rep.Body, rep.FuelUsed, rec.Body, rec.FuelUsed, eg.urls, err)
	}
	tape.Rewind()
	_, err = m.Call(ctx, sandbox.Request{Body: []byte(`c{"method":"POST","url":"http://api.test/y"}`), Replay: tape})
	var div *sandbox.DivergenceError
	if !errors.As(err, &div) || div.Want != "http_request "+tape.Answers[0].Detail || !strings.HasPrefix(div.Got, "http_request POST http://api.test #") || div.Got == div.Want {
		t.Fatalf("a replay to another URL: %v", err)
	}
}

// TestASnapshotIsRebuiltFromItsTape: a Go module's snapshot depends on what
// the host answered its initialisation (the runtime draws random seeds and
// reads the clocks), so two sandboxes take different ones; a third, given
// the first's tape, takes the first's exactly, and a call recorded on the
// first replays on it to the same output and fuel.
func TestASnapshotIsRebuiltFromItsTape(t *testing.T) {
	ctx := context.Background()
	mod := filepath.Join("..", "..", "testdata", "gocanary", "gocanary.wasm")
	warm := func(tape *sandbox.Tape) (*sandbox.Module, string, *sandbox.Tape) {
		t.Helper()
		m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 1, SnapshotTapeBytes: sandbox.MaxTapeBytes}), mod)
		var err error
		if tape == nil {
			err = m.Warm(ctx, nil)
		} else {
			err = m.WarmReplay(ctx, nil, tape)
		}
		id, got, ok := m.Snapshot()
		if err != nil || !ok || !strings.HasPrefix(id, "sha256:") {
			t.Fatalf("warm: %v, snapshot %q %v", err, id, ok)
		}
		return m, id, got
	}
	first, id1, tape1 := warm(nil)
	if len(tape1.Answers) == 0 || tape1.Truncated {
		t.Fatalf("the Go runtime's initialisation asked the host nothing (%d answers, truncated %v)", len(tape1.Answers), tape1.Truncated)
	}
	if _, id2, _ := warm(nil); id2 == id1 {
		t.Fatal("two snapshots of a Go module are the same without a tape: the test shows nothing")
	}
	again, id3, _ := warm(tape1)
	if id3 != id1 {
		t.Fatalf("the snapshot rebuilt from the first's tape is %s, the first %s", id3, id1)
	}
	call := &sandbox.Tape{}
	body := []byte(`{"kind":"invoke","tool":{"id":"canary.keep"},"input":{"n":1},"ctx":{"tenantId":"t","runId":"r"}}`)
	rec, err := first.Call(ctx, sandbox.Request{Body: body, Record: call})
	if err != nil {
		t.Fatal(err)
	}
	call.Rewind()
	rep, err := again.Call(ctx, sandbox.Request{Body: body, Replay: call})
	if err != nil || string(rep.Body) != string(rec.Body) || rep.FuelUsed != rec.FuelUsed {
		t.Fatalf("the call replayed on the rebuilt snapshot: %s (fuel %d), recorded %s (fuel %d); %v", rep.Body, rep.FuelUsed, rec.Body, rec.FuelUsed, err)
	}
}

// TestATapeIsBoundedInAnswers: a guest that reads the clock a million
// times in one call fills a recording's bound with answers of 8 bytes each
// counted with what each answer costs to keep, not at 8 bytes apiece
// (before, a 64 KiB bound kept 8,192 of them, and the default of 1 MiB
// 131,072 answers, some 13 MB of memory for one call); the call itself
// answers as it would unrecorded.
func TestATapeIsBoundedInAnswers(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 1}), hostile("clockflood"))
	tape := &sandbox.Tape{Max: 64 << 10}
	rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte("x"), Record: tape})
	if err != nil || len(rep.Body) != 8 {
		t.Fatalf("the call: %v %x", err, rep.Body)
	}
	if !tape.Truncated || len(tape.Answers) == 0 || len(tape.Answers) > (64<<10)/72 || tape.Size() > 64<<10 {
		t.Fatalf("the tape: truncated %v, %d answers, size %d", tape.Truncated, len(tape.Answers), tape.Size())
	}
}

// TestARecordedRequestHeadIsReadWithinItsBound: a recorded call's request
// head past its 64 KiB bound is refused (bad-request) without being
// decoded, for the tape as for the answer; before, recording decoded any
// head the guest passed, of any size, to name it on the tape.
func TestARecordedRequestHeadIsReadWithinItsBound(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 1}), hostile("httpabi"))
	tape := &sandbox.Tape{}
	head := `{"url":"http://api.test/` + strings.Repeat("x", 70<<10) + `"}`
	rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte("c" + head), Egress: &fakeEgress{}, Record: tape})
	if err != nil || !strings.Contains(string(rep.Body), abi.EgressBadRequest) || len(tape.Answers) != 1 || tape.Answers[0].Detail != "(not a request)" {
		t.Fatalf("%q: %v; the tape: %+v", rep.Body, err, tape.Answers)
	}
}

// TestATapeCountsWhatItKeepsOfARequest: a guest sending requests with 60
// KiB URLs (each refused at once) fills a recording's bound with their
// details counted: every detail is bounded whatever the URL, and the tape
// keeps no more than its bound (before, a 64 KiB bound kept 17 MB of URLs
// in one call). Its snapshot's tape is bounded the same way, and a
// sandbox that records nothing keeps none (before, it kept every URL
// whole: 1,200 such requests in _initialize held 70 MiB).
func TestATapeCountsWhatItKeepsOfARequest(t *testing.T) {
	ctx := context.Background()
	const bound = 24 << 10 // 150 refusals take more
	m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 1, SnapshotTapeBytes: bound}), hostile("urlflood"))
	tape := &sandbox.Tape{Max: bound}
	rep, err := m.Call(ctx, sandbox.Request{Body: bytes.Repeat([]byte{'x'}, 150), Record: tape})
	if err != nil || string(rep.Body) != "{}" {
		t.Fatalf("the call: %v %q", err, rep.Body)
	}
	kept := func(name string, tape *sandbox.Tape) {
		t.Helper()
		n := 0
		for _, a := range tape.Answers {
			if len(a.Detail) > sandbox.MaxDetailBytes || strings.Contains(a.Detail, "AAAA") {
				t.Fatalf("%s: a detail of %d bytes: %.80q", name, len(a.Detail), a.Detail)
			}
			n += len(a.Value) + len(a.Detail)
		}
		if !tape.Truncated || len(tape.Answers) == 0 || n > tape.Size() || tape.Size() > bound {
			t.Fatalf("%s: truncated %v, %d answers of %d bytes, size %d", name, tape.Truncated, len(tape.Answers), n, tape.Size())
		}
	}
	kept("the call's tape", tape)
	_, snap, ok := m.Snapshot()
	if !ok || snap == nil {
		t.Fatal("no snapshot tape")
	}
	kept("the snapshot's tape", snap)
	bare := compile(t, newSandbox(t, sandbox.Config{PoolSize: 1}), hostile("urlflood"))
	if err := bare.Warm(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, snap, ok := bare.Snapshot(); !ok || snap != nil {
		t.Fatalf("a sandbox that records nothing kept a snapshot tape of %d bytes", snap.Size())
	}
}
