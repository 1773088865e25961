package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/replay"
)

// replayProc runs packd replay with env added to the test's environment.
func replayProc(t *testing.T, env []string, args ...string) runResult {
	t.Helper()
	return packdProcEnv(t, env, append([]string{"replay"}, args...)...)
}

// servedRecords reads the records packd serve --record wrote into dir (its
// segments), and answers their bytes together and the records, failing
// the test on a line that is not one.
func servedRecords(t *testing.T, dir string) ([]byte, []*replay.Record) {
	t.Helper()
	segments, _ := filepath.Glob(filepath.Join(dir, "*"+replay.SegmentExt))
	var raw []byte
	var recs []*replay.Record
	for _, f := range segments {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
		for r := range replay.ReadSegment(bytes.NewReader(b), maxRecordFile) {
			if r.Err != nil {
				t.Fatalf("%s:%d: %v", f, r.Line, r.Err)
			}
			recs = append(recs, r.Record)
		}
	}
	return raw, recs
}

// recordedRun serves index with --record, makes the calls, stops the
// service (which writes out its records) and returns the record directory,
// checked to hold none of the secrets, and the host imports their tapes
// hold.
func recordedRun(t *testing.T, index string, env map[string]string, calls []string, secrets ...string) (string, map[string]int) {
	t.Helper()
	dir := t.TempDir()
	s := start(t, index, env, "--record", dir)
	for i, body := range calls {
		if r := s.invoke(t, body); r.status != 200 {
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("packd serve exited %d", code)
	}
	raw, recs := servedRecords(t, dir)
	if len(recs) != len(calls) {
		t.Fatalf("%d records of %d calls; its records:\n%s", len(recs), len(calls), strings.Join(s.stderr.snapshot(), "\n"))
	}
	for _, secret := range secrets {
		if bytes.Contains(raw, []byte(secret)) {
			t.Fatalf("the records hold the secret %q", secret)
		}
	}
	imports := map[string]int{}
	for _, rec := range recs {
		for _, a := range rec.Tape {
			imports[a.Import]++
		}
	}
	return dir, imports
}

// TestRecordedCallsReplayExactly: 100 calls recorded by packd serve in each
// of the Go, C and TypeScript conformance packs (echo, defaults, a call
// context with a secret, a throw, output, a sleep: the clock and
// poll_oneoff) and in each egress test pack (outbound requests to a
// loopback API with a bound credential, random bytes) replay offline with
// the same output and fuel, every one; the records hold neither the
// secrets nor the environment's value.
func TestRecordedCallsReplayExactly(t *testing.T) {
	const ctxSecret, bound, visible = "s3cr3t-conformance", "tok-bound-credential-1", "visible-value-42"
	secretsFile := filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(secretsFile, []byte(`{"apiKey":"`+ctxSecret+`","apiToken":"`+bound+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	callCtx := `{"tenantId":"t-replay","runId":"run-replay","secrets":{"apiKey":"` + ctxSecret + `"}}`
	var conformanceCalls []string
	for i := range 100 {
		var id, input string
		switch i % 6 {
		case 0:
			id, input = "conformance.echo", fmt.Sprintf(`{"message":"message %d"}`, i)
		case 1:
			id, input = "conformance.defaults", fmt.Sprintf(`{"name":"n%d"}`, i)
		case 2:
			id, input = "conformance.context", `{}`
		case 3:
			id, input = "conformance.process-env", `{}`
		case 4:
			id, input = "conformance.noisy", `{}`
		case 5:
			id, input = "conformance.sleep", fmt.Sprintf(`{"ms":%d}`, i%3)
		}
		conformanceCalls = append(conformanceCalls, invokeBody(id, "", input, callCtx))
	}
	var mu sync.Mutex
	var seen []string
	api := upstream(t, "127.0.0.1:0", &seen, &mu)
	var netCalls []string
	for i := range 100 {
		path := []string{"/headers", "/reflect"}[i%2]
		netCalls = append(netCalls, invokeBody("net.fetch", "", fmt.Sprintf(`{"url":"%s%s?i=%d","nonce":%v}`, api, path, i, i%3 != 0),
			`{"tenantId":"t-replay","runId":"run-replay","secrets":{"apiToken":"`+bound+`","apiKey":"`+ctxSecret+`"}}`))
	}
	env := map[string]string{"CONFORMANCE_VISIBLE": visible}
	for _, lang := range []string{"go", "c", "ts"} {
		t.Run(lang, func(t *testing.T) {
			index := conformancePacks[lang]
			dir, imports := recordedRun(t, index, env, conformanceCalls, ctxSecret, visible)
			if imports["poll_oneoff"] == 0 || lang != "c" && imports["clock_time_get"] == 0 {
				t.Errorf("no recorded call slept, or read the clock (C's nanosleep does not): %v", imports)
			}
			r := replayProc(t, []string{"CONFORMANCE_VISIBLE=" + visible}, "--index", index, "--secrets", secretsFile, dir)
			if r.code != 0 || !strings.Contains(r.stdout, "100 of 100 records replayed identically") {
				t.Fatalf("packd replay: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
	for _, module := range []string{"gonet/gonet.wasm", "cnet/cnet.wasm", "jsnet/net.wasm"} {
		t.Run(filepath.Dir(module), func(t *testing.T) {
			index := netPackIndex(t, module)
			dir, imports := recordedRun(t, index, map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8"}, netCalls, bound, ctxSecret)
			// (C's clock reads are here: its conformance pack reads none.)
			if imports["http_request"] != 100 || imports["random_get"] == 0 || module == "cnet/cnet.wasm" && imports["clock_time_get"] == 0 {
				t.Errorf("the recorded calls did not all send a request, draw random bytes (and in C read the clock): %v", imports)
			}
			r := replayProc(t, nil, "--index", index, "--secrets", secretsFile, dir)
			if r.code != 0 || !strings.Contains(r.stdout, "100 of 100 records replayed identically") {
				t.Fatalf("packd replay: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// netPackIndex writes a pack of one egress test module whose net.fetch
// may reach 127.0.0.1 with the bound credential apiToken.
func netPackIndex(t *testing.T, module string) string {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", module))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	index := `{"v":1,"packId":"replay","packVersion":"1.0.0","artifactVersion":"replay-1","publishedAt":"2026-12-02T00:00:00.000Z","agents":[],"flows":[],"guardrails":[],` +
		`"tools":[{"id":"net.fetch","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"net.wasm",` +
		`"network":{"kind":"allowlist","hosts":["127.0.0.1"],"credentials":{"127.0.0.1":{"secret":"apiToken","scheme":"Bearer"}}}}]}`
	for name, data := range map[string][]byte{"index.json": []byte(index), "net.wasm": wasm} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "index.json")
}

// TestAChangedModuleReplaysToItsFirstDivergence: the C egress pack built
// with one constant changed (the random bytes "nonce" draws, 8 to 16)
// replays the recorded calls that drew none identically, and each that
// did stops at that host call, named with its size in the recording and
// here and the fuel; packd replay exits 1 and says how many differ.
func TestAChangedModuleReplaysToItsFirstDivergence(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "cnet", "cnet.c"))
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(src, []byte("#define NONCE_BYTES 8"), []byte("#define NONCE_BYTES 16"), 1)
	if bytes.Equal(changed, src) {
		t.Fatal("testdata/cnet/cnet.c has no #define NONCE_BYTES 8")
	}
	wasm := filepath.Join(t.TempDir(), "changed.wasm")
	cc := exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-mbulk-memory", "-O2", "-o", wasm, "-x", "c", "-")
	cc.Dir = filepath.Join("..", "..", "testdata", "cnet") // its #include is relative
	cc.Stdin = bytes.NewReader(changed)
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	var mu sync.Mutex
	var seen []string
	api := upstream(t, "127.0.0.1:0", &seen, &mu)
	ctx := `{"tenantId":"t","runId":"r"}`
	calls := []string{
		invokeBody("net.fetch", "", `{"url":"`+api+`/headers"}`, ctx),
		invokeBody("net.fetch", "", `{"url":"`+api+`/headers","nonce":true}`, ctx),
	}
	dir, _ := recordedRun(t, netPackIndex(t, "cnet/cnet.wasm"), map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8"}, calls)
	r := replayProc(t, nil, "--module", wasm, dir)
	if r.code != 1 || !strings.Contains(r.stdout, "1 of 2 records replayed identically") ||
		!strings.Contains(r.stdout, "the recording has random_get(8) of 8 bytes, this call asked for random_get(16) of 16 bytes (fuel ") ||
		!strings.Contains(r.stdout, "the module "+wasm+" is sha256:") {
		t.Fatalf("packd replay on the changed module: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var div int
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "DIFFERENT") {
			div++
		}
	}
	if div != 1 {
		t.Fatalf("%d records differ, want 1:\n%s", div, r.stdout)
	}
}

// TestReplayRefusesBadRecords: packd replay reads records as untrusted
// input. A file that is not a record, a record of another format, one
// whose module path leaves the module root, one whose outbound answer is
// cut short, one of a module that spins past its --timeout, and one
// larger than any record each fail with what is wrong, beside a good
// record that replays identically, and the process exits 1.
func TestReplayRefusesBadRecords(t *testing.T) {
	dir := t.TempDir()
	index := netPackIndex(t, "cnet/cnet.wasm")
	r := packdProc(t, "invoke", "--index", index, "--network-allow", "127.0.0.0/8", "--tool", "net.fetch", "--input", `{"url":"http://127.0.0.1:1/x"}`, "--record", dir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if r.code != 0 || len(files) != 1 {
		t.Fatalf("packd invoke --record: %d %s", r.code, r.stderr)
	}
	good, _ := os.ReadFile(files[0])
	if !json.Valid(good) {
		t.Fatalf("the record is not JSON: %s", good)
	}
	write := func(name string, edit func(map[string]any)) {
		var m map[string]any
		_ = json.Unmarshal(good, &m)
		edit(m)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "notjson.json"), []byte("{nope"), 0o600)
	write("format.json", func(m map[string]any) { m["packdRecord"] = 99 })
	write("escape.json", func(m map[string]any) {
		m["module"] = map[string]any{"path": "../../../../etc/passwd", "sha256": "sha256:00"}
	})
	write("cut.json", func(m map[string]any) { // an answer of 1 byte in 0
		for _, a := range m["tape"].([]any) {
			if a := a.(map[string]any); a["import"] == "http_request" {
				a["value"] = "AQAAAA=="
			}
		}
	})
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, bytes.Repeat([]byte(" "), 33<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	// A FIFO named like a record (before, packd replay waited on it for
	// ever): a directory's walk passes it by, and named, it is refused.
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r = replayProc(t, nil, "--index", index, dir, fifo)
	for _, want := range []string{
		"FAILED     " + fifo + ": not a regular file",
		"identical  " + files[0],
		"FAILED     " + filepath.Join(dir, "notjson.json") + ": not a packd record",
		"FAILED     " + filepath.Join(dir, "format.json") + ": not a packd record of format 1 (packdRecord is 99)",
		"FAILED     " + filepath.Join(dir, "escape.json") + ": the index has no module of the recorded hash sha256:00 or path ../../../../etc/passwd",
		"FAILED     " + huge + ": larger than a record can be (32 MiB)",
		"DIFFERENT  " + filepath.Join(dir, "cut.json"),
		"the tape's answer to http_request GET http://127.0.0.1 #",
		"1 of 7 records replayed identically",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("packd replay does not say %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	if r.code != 1 {
		t.Errorf("packd replay exited %d, want 1", r.code)
	}
	// A module that spins where the recorded one ended, stopped by --timeout.
	spin := filepath.Join("..", "..", "testdata", "hostile", "loop.wasm")
	r = replayProc(t, nil, "--module", spin, "--timeout", "300ms", files[0])
	if r.code != 1 || !strings.Contains(r.stdout, "the replay did not end within --timeout 300ms") {
		t.Errorf("a spinning module: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestARecordOfHostileURLsIsBounded: packd invoke --record at the
// defaults, of a call sending 450 requests with 60 KiB URLs (each refused:
// its host is off the allowlist) from a snapshot whose _initialize sent
// 150, writes a record within --record-call-kib and 64 KiB that holds no
// URL, and it replays identically (before, such a record held every URL
// whole: about 27 MB).
func TestARecordOfHostileURLsIsBounded(t *testing.T) {
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "urlflood.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	index := `{"v":1,"packId":"flood","packVersion":"1.0.0","artifactVersion":"flood-1","publishedAt":"2026-12-04T00:00:00.000Z","agents":[],"flows":[],"guardrails":[],` +
		`"tools":[{"id":"hostile.urlflood","version":"1.0.0","input":{"type":"object"},"output":{},"modulePath":"urlflood.wasm","network":{"kind":"allowlist","hosts":["api.test"]}}]}`
	for name, data := range map[string][]byte{"index.json": []byte(index), "urlflood.wasm": wasm} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	records := filepath.Join(dir, "records")
	input := `{"pad":"` + strings.Repeat("x", 300) + `"}` // the guest's request is some 450 bytes: as many requests
	r := packdProc(t, "invoke", "--index", filepath.Join(dir, "index.json"), "--pool-size", "1", "--tool", "hostile.urlflood", "--input", input, "--record", records)
	files, _ := filepath.Glob(filepath.Join(records, "*.json"))
	if r.code != 0 || len(files) != 1 {
		t.Fatalf("packd invoke --record: %d, %d records\n%s%s", r.code, len(files), r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(files[0])
	if len(b) > 1<<20+64<<10 || strings.Contains(string(b), "evil.example/") || strings.Count(string(b), `"import":"http_request"`) < 450 {
		t.Fatalf("a record of %d bytes, with %d requests", len(b), strings.Count(string(b), `"import":"http_request"`))
	}
	r = replayProc(t, nil, "--index", filepath.Join(dir, "index.json"), records)
	if r.code != 0 || !strings.Contains(r.stdout, "1 of 1 records replayed identically") {
		t.Fatalf("packd replay: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestABoundCredentialNeedsNoValueToReplay: a record of a call whose only
// secret is a credential the index binds (packd sent it; the pack never
// had it) replays identically without --secrets, and does not list the
// credential as one the guest saw a placeholder of; a secret the guest did
// see still is.
func TestABoundCredentialNeedsNoValueToReplay(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	api := upstream(t, "127.0.0.1:0", &seen, &mu)
	index := netPackIndex(t, "gonet/gonet.wasm")
	dir := t.TempDir()
	r := packdProc(t, "invoke", "--index", index, "--network-allow", "127.0.0.0/8", "--tool", "net.fetch", "--input", `{"url":"`+api+`/headers"}`,
		"--ctx", `{"tenantId":"t","runId":"r","secrets":{"apiToken":"bound-cred-123","seen":"guest-saw-456"}}`, "--record", dir)
	if r.code != 0 {
		t.Fatalf("packd invoke --record: %d %s", r.code, r.stderr)
	}
	r = replayProc(t, nil, "--index", index, dir)
	if !strings.Contains(r.stdout, "ctx.secrets.seen") || strings.Contains(r.stdout, "ctx.secrets.apiToken") {
		t.Errorf("packd replay without --secrets: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestSegmentRecordsReplayOneByOne: packd serve --record appends its
// records to segments, not a file a call; packd replay replays a whole
// segment, one record of it (SEGMENT.jsonl:LINE), and --extract writes a
// record as a file of its own, with its snapshot's tape, which replays
// identically; a line with no record is named.
func TestSegmentRecordsReplayOneByOne(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	api := upstream(t, "127.0.0.1:0", &seen, &mu)
	index := netPackIndex(t, "gonet/gonet.wasm")
	ctx := `{"tenantId":"t","runId":"r"}`
	calls := []string{
		invokeBody("net.fetch", "", `{"url":"`+api+`/a"}`, ctx),
		invokeBody("net.fetch", "", `{"url":"`+api+`/b"}`, ctx),
		invokeBody("net.fetch", "", `{"url":"`+api+`/c"}`, ctx),
	}
	dir, _ := recordedRun(t, index, map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8"}, calls)
	segments, _ := filepath.Glob(filepath.Join(dir, "*"+replay.SegmentExt))
	entries, _ := os.ReadDir(dir)
	if len(segments) != 1 || len(entries) != 1 {
		t.Fatalf("the record directory holds %v", entries)
	}
	seg := segments[0]
	b, _ := os.ReadFile(seg)
	if n := strings.Count(string(b), `"packdSnapshot":1`); n != 1 {
		t.Fatalf("%d snapshot lines for 3 calls on one snapshot", n)
	}
	if r := replayProc(t, nil, "--index", index, dir); r.code != 0 || !strings.Contains(r.stdout, "3 of 3 records replayed identically") {
		t.Fatalf("the segment: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := replayProc(t, nil, "--index", index, seg+":3"); r.code != 0 || !strings.Contains(r.stdout, "identical  "+seg+":3:") || !strings.Contains(r.stdout, "1 of 1 records") {
		t.Fatalf("one record of the segment: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	kept := t.TempDir()
	r := replayProc(t, nil, "--extract", kept, seg+":4")
	files, _ := filepath.Glob(filepath.Join(kept, "*.json"))
	if r.code != 0 || len(files) != 1 || !strings.HasPrefix(r.stdout, seg+":4: ") {
		t.Fatalf("--extract: %d %v\n%s%s", r.code, files, r.stdout, r.stderr)
	}
	one, _ := os.ReadFile(files[0])
	if !strings.Contains(string(one), `"snapshot":{"id":"sha256:`) || !strings.Contains(string(one), `"tape":[{"import"`) {
		t.Fatalf("the extracted record lacks its snapshot's tape: %.300s", one)
	}
	if r := replayProc(t, nil, "--index", index, files[0]); r.code != 0 || !strings.Contains(r.stdout, "1 of 1 records replayed identically") {
		t.Fatalf("the extracted record: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := replayProc(t, nil, "--index", index, seg+":99"); r.code != 1 || !strings.Contains(r.stdout, "has no record at line 99") {
		t.Fatalf("a line with no record: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
