package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	cacheDir    = filepath.Join(os.TempDir(), "packd-test-wazero-cache")
	conformance = filepath.Join("..", "..", "wasm-examples", "conformance", "index.json")
	// cConformance is the same fixture pack written in C (sdk/c), and
	// tsConformance in TypeScript (sdk/js).
	cConformance  = filepath.Join("..", "..", "wasm-examples", "c-conformance", "index.json")
	tsConformance = filepath.Join("..", "..", "wasm-examples", "ts-conformance", "index.json")
	pyConformance = filepath.Join("..", "..", "wasm-examples", "py-conformance", "index.json")
	// conformancePacks: the suite runs against each.
	conformancePacks = map[string]string{"go": conformance, "c": cConformance, "ts": tsConformance, "py": pyConformance}
	hostileIndex     = filepath.Join("..", "..", "testdata", "hostile", "index.json")
	// hostileLoadIndex names modules that must not load
	hostileLoadIndex = filepath.Join("..", "..", "testdata", "hostile", "load.json")
	conformanceCtx   = `{"tenantId":"t-conformance","runId":"run-conformance"}`
	conformanceWasm  = filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm")
)

type runResult struct {
	code           int
	stdout, stderr string
}

func packd(t *testing.T, args ...string) runResult {
	t.Helper()
	var out, errb bytes.Buffer
	if len(args) > 0 && (args[0] == "invoke" || args[0] == "check" || args[0] == "index") {
		args = append([]string{args[0], "--cache-dir", cacheDir}, args[1:]...)
	}
	code := run(args, strings.NewReader(""), &out, &errb)
	return runResult{code, out.String(), errb.String()}
}

// packdProc runs the packd binary as packd does in-process: for the
// commands that load a whole Go pack, the binary (not built for the race
// detector) takes a fraction of the time.
func packdProc(t *testing.T, args ...string) runResult {
	t.Helper()
	return packdProcEnv(t, nil, args...)
}

// packdProcEnv is packdProc with env added to the test's environment.
func packdProcEnv(t *testing.T, env []string, args ...string) runResult {
	t.Helper()
	if len(args) > 0 && (args[0] == "invoke" || args[0] == "check" || args[0] == "index" || args[0] == "replay") {
		args = append([]string{args[0], "--cache-dir", cacheDir}, args[1:]...)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(packdPath, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return runResult{code, out.String(), errb.String()}
}

func invokeTool(t *testing.T, index, id, input string, extra ...string) runResult {
	t.Helper()
	return packd(t, append([]string{"invoke", "--index", index, "--tool", id, "--input", input, "--ctx", conformanceCtx}, extra...)...)
}

func TestMain(m *testing.M) {
	if _, err := os.Stat(conformanceWasm); err != nil {
		os.Stderr.WriteString("the example guests are not built: run `make test` (or `make wasm`)\n")
		os.Exit(1)
	}
	code := buildBinary()
	if code == 0 {
		code = m.Run()
	}
	os.RemoveAll(binDir)
	os.Exit(code)
}

// fullCtx is a callContext with every field the protocol names.
const fullCtx = `{"tenantId":"t-conformance","runId":"run-conformance","projectId":"p1","orgId":"o1","requestId":"call-1","idempotencyKey":"a70d5bff-e713-4322-b2ea-9d5c4926a861","env":{"REGION":"eu"},"secrets":{"apiKey":"s3cr3t"},"config":{"k":[1,2]},"settings":{"block":{"x":true}}}`

// conformanceCase is one call of the conformance fixture pack
// (PROTOCOL-NOTES §8) with the exact response message it must get. The same
// table runs through packd invoke and over HTTP.
type conformanceCase struct {
	name, id, input string
	version         string // named tool version, "" for none
	timeoutMs       int    // deadline, 0 for the default
	want            string
	code            int // packd invoke's exit code
}

var toolCases = []conformanceCase{
	{"echo", "conformance.echo", `{"message":"hello"}`, "", 0, `{"v":2,"kind":"result","output":{"message":"hello"}}`, 0},
	{"echo missing message", "conformance.echo", `{}`, "", 0,
		`{"v":2,"kind":"error","code":"input-validation-failed","message":"Tool \"conformance.echo\" input failed validation","toolId":"conformance.echo","issues":[{"instancePath":"","schemaPath":"#/required","keyword":"required","params":{"missingProperty":"message"},"message":"must have required property 'message'"}]}`, 1},
	{"echo bad input", "conformance.echo", `{"message":"","extra":1}`, "", 0,
		`{"v":2,"kind":"error","code":"input-validation-failed","message":"Tool \"conformance.echo\" input failed validation","toolId":"conformance.echo","issues":[{"instancePath":"","schemaPath":"#/additionalProperties","keyword":"additionalProperties","params":{"additionalProperty":"extra"},"message":"must NOT have additional properties"},{"instancePath":"/message","schemaPath":"#/properties/message/minLength","keyword":"minLength","params":{"limit":1},"message":"must NOT have fewer than 1 characters"}]}`, 1},
	{"echo with the version named", "conformance.echo", `{"message":"v"}`, "1.0.0", 0, `{"v":2,"kind":"result","output":{"message":"v"}}`, 0},
	{"echo with another version", "conformance.echo", `{"message":"v"}`, "9.9.9", 0,
		`{"v":2,"kind":"error","code":"tool-version-mismatch","message":"Tool \"conformance.echo\" is 1.0.0 in this pack; the caller asked for 9.9.9","toolId":"conformance.echo"}`, 1},
	{"bad-output", "conformance.bad-output", `{}`, "", 0,
		`{"v":2,"kind":"error","code":"output-validation-failed","message":"Tool \"conformance.bad-output\" handler produced output that failed validation","toolId":"conformance.bad-output","issues":[{"instancePath":"/message","schemaPath":"#/properties/message/type","keyword":"type","params":{"type":"string"},"message":"must be string"}]}`, 1},
	{"context minimal", "conformance.context", `{}`, "", 0,
		`{"v":2,"kind":"result","output":{"tenantId":"t-conformance","runId":"run-conformance","env":{},"secrets":{},"config":{}}}`, 0},
	{"defaults", "conformance.defaults", `{"name":"Ada"}`, "", 0,
		`{"v":2,"kind":"result","output":{"name":"Ada","greeting":"Hello","options":{"loud":false}}}`, 0},
	{"defaults keep what is sent", "conformance.defaults", `{"options":{"loud":true},"name":"Bo","greeting":"Hi"}`, "", 0,
		`{"v":2,"kind":"result","output":{"options":{"loud":true},"name":"Bo","greeting":"Hi"}}`, 0},
	{"hold", "conformance.hold", `{"release":"r-1","ms":5}`, "", 0, `{"v":2,"kind":"result","output":{"released":true}}`, 0},
	// Ajv reports properties in the schema's order: the canonical index
	// (keys sorted, as a kindgi indexer writes it) has ms before release.
	{"hold bad input", "conformance.hold", `{"release":"","ms":-1}`, "", 0,
		`{"v":2,"kind":"error","code":"input-validation-failed","message":"Tool \"conformance.hold\" input failed validation","toolId":"conformance.hold","issues":[{"instancePath":"/ms","schemaPath":"#/properties/ms/minimum","keyword":"minimum","params":{"comparison":">=","limit":0},"message":"must be >= 0"},{"instancePath":"/release","schemaPath":"#/properties/release/minLength","keyword":"minLength","params":{"limit":1},"message":"must NOT have fewer than 1 characters"}]}`, 1},
	{"noisy", "conformance.noisy", `{}`, "", 0, `{"v":2,"kind":"result","output":{"ok":true}}`, 0},
	{"process-env", "conformance.process-env", `{}`, "", 0, `{"v":2,"kind":"result","output":{"names":["CONFORMANCE_VISIBLE"]}}`, 0},
	{"sleep", "conformance.sleep", `{"ms":20}`, "", 0, `{"v":2,"kind":"result","output":{"slept":20}}`, 0},
	{"sleep past the deadline", "conformance.sleep", `{"ms":60000}`, "", 300,
		`{"v":2,"kind":"error","code":"deadline-exceeded","message":"conformance.sleep passed its deadline","toolId":"conformance.sleep"}`, 1},
	{"throws", "conformance.throws", `{}`, "", 0,
		`{"v":2,"kind":"error","code":"handler-throw","message":"Handler for tool \"conformance.throws\" threw: Error: boom","toolId":"conformance.throws","cause":{"name":"Error","message":"boom","stack":"Error: boom"}}`, 1},
	{"unknown tool", "conformance.nope", `{}`, "", 0,
		`{"v":2,"kind":"error","code":"tool-not-in-pack","message":"This pack has no tool \"conformance.nope\"","toolId":"conformance.nope"}`, 1},
}

// jsFrames are the frames of a JavaScript throw's stack ("\n    at f
// (pack.js:3)"), which the Go and C fixtures do not have: the suite
// compares the rest (TestJSThrowHasItsStack checks them). pyTraceback is a
// Python traceback in a JSON string, whose last line ("Error: boom") is what
// the other fixtures' stacks hold (TestPyThrowNamesThePacksLines checks the
// frames).
var (
	jsFrames    = regexp.MustCompile(`(\\n    at [^"\\]*)+`)
	pyTraceback = regexp.MustCompile(`Traceback \(most recent call last\):\\n(?:(?:[^"\\]|\\[^n])*\\n)*?([A-Z]\w*: (?:[^"\\]|\\[^n])*)\\n"`)
)

func withoutJSFrames(s string) string {
	return pyTraceback.ReplaceAllString(jsFrames.ReplaceAllString(s, ""), `$1"`)
}

// TestConformancePack runs every tool and check of the conformance fixture
// pack (PROTOCOL-NOTES §8) through packd invoke and compares the exact
// response message and exit code.
func TestConformancePack(t *testing.T) {
	t.Setenv("CONFORMANCE_VISIBLE", "1")
	t.Setenv("KINDGI_PACK_SERVICE_TOKEN", "must-never-be-seen")
	t.Setenv("UNDECLARED_SECRET", "nor-this")
	for lang, index := range conformancePacks {
		t.Run(lang, func(t *testing.T) { conformancePack(t, index) })
	}
}

func conformancePack(t *testing.T, index string) {
	for _, c := range toolCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case is a packd invoke of its own
			start := time.Now()
			var extra []string
			if c.version != "" {
				extra = append(extra, "--version", c.version)
			}
			if c.timeoutMs > 0 {
				extra = append(extra, "--timeout-ms", strconv.Itoa(c.timeoutMs))
			}
			r := invokeTool(t, index, c.id, c.input, extra...)
			if got := withoutJSFrames(strings.TrimSuffix(r.stdout, "\n")); got != c.want || r.code != c.code {
				t.Fatalf("exit %d, stdout:\n%s\nwant exit %d:\n%s\nstderr: %s", r.code, got, c.code, c.want, r.stderr)
			}
			if strings.Count(r.stdout, "\n") != 1 {
				t.Errorf("stdout holds more than the response: %q", r.stdout)
			}
			if c.timeoutMs > 0 && time.Since(start) > 20*time.Second {
				t.Errorf("the deadline did not stop the guest in time")
			}
		})
	}

	t.Run("context full comes back equal", func(t *testing.T) {
		r := packd(t, "invoke", "--index", index, "--tool", "conformance.context", "--ctx", fullCtx)
		var got struct{ Output map[string]any }
		var want map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		_ = json.Unmarshal([]byte(fullCtx), &want)
		if !reflect.DeepEqual(got.Output, want) {
			t.Fatalf("got %v\nwant %v", got.Output, want)
		}
	})
	t.Run("guest output goes to stderr, never into the response", func(t *testing.T) {
		r := invokeTool(t, index, "conformance.noisy", `{}`)
		// Each stream's lines in their order; the two streams may interleave.
		first := strings.Index(r.stderr, "noisy: a line on stdout\n")
		second := strings.Index(r.stderr, `{"v":2,"kind":"result","output":{"ok":false}}`+"\n")
		if first < 0 || second < first ||
			!strings.Contains(r.stderr, "noisy: a line on stderr\n") || r.stdout != `{"v":2,"kind":"result","output":{"ok":true}}`+"\n" {
			t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
		}
		r = invokeTool(t, index, "conformance.hold", `{"release":"r-9","ms":1}`)
		if !strings.Contains(r.stderr, "hold: r-9\n") {
			t.Fatalf("hold line missing: %q", r.stderr)
		}
	})
}

var checkCases = []struct {
	name, id, config, trace, want string
	code                          int
}{
	{"min-length passes", "conformance.checks.min-length", `{}`, `{"output":"  ab  "}`,
		`{"v":2,"kind":"check-result","result":{"passed":true}}`, 0},
	{"min-length too short", "conformance.checks.min-length", `{"minLength":5}`, `{"output":"  abc  "}`,
		`{"v":2,"kind":"check-result","result":{"passed":false,"reason":"too short"}}`, 0},
	{"min-length bad config", "conformance.checks.min-length", `{"minLength":-1}`, `{}`,
		`{"v":2,"kind":"error","code":"input-validation-failed","message":"Check \"conformance.checks.min-length\" config failed validation at /minLength: must be >= 0","checkId":"conformance.checks.min-length","issues":[{"instancePath":"/minLength","schemaPath":"#/properties/minLength/minimum","keyword":"minimum","params":{"comparison":">=","limit":0},"message":"must be >= 0"}]}`, 1},
	{"throws", "conformance.checks.throws", `{}`, `{}`,
		`{"v":2,"kind":"error","code":"handler-throw","message":"Handler for check \"conformance.checks.throws\" threw: Error: check boom","checkId":"conformance.checks.throws","cause":{"name":"Error","message":"check boom","stack":"Error: check boom"}}`, 1},
	{"guardrail id is not the check id", "conformance.min-length", `{}`, `{}`,
		`{"v":2,"kind":"error","code":"check-not-in-pack","message":"This pack has no check \"conformance.min-length\"","checkId":"conformance.min-length"}`, 1},
}

func TestConformanceChecks(t *testing.T) {
	for lang, index := range conformancePacks {
		for _, c := range checkCases {
			t.Run(lang+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				r := packd(t, "invoke", "--index", index, "--check", c.id, "--config", c.config, "--trace", c.trace)
				if got := withoutJSFrames(strings.TrimSuffix(r.stdout, "\n")); got != c.want || r.code != c.code {
					t.Fatalf("exit %d, stdout:\n%s\nwant exit %d:\n%s\nstderr: %s", r.code, got, c.code, c.want, r.stderr)
				}
			})
		}
	}
}

// TestHostileGuests: every hostile fixture gets its protocol error within its
// deadline and the process goes on.
func TestHostileGuests(t *testing.T) {
	cases := map[string]string{
		"loop":     `"code":"deadline-exceeded","message":"hostile.loop passed its deadline"`,
		"sleep":    `"code":"deadline-exceeded","message":"hostile.sleep passed its deadline"`,
		"trap":     `"code":"handler-throw","message":"Handler for tool \"hostile.trap\" threw: RuntimeError: unreachable"`,
		"recurse":  `"code":"handler-throw","message":"Handler for tool \"hostile.recurse\" threw: RuntimeError: stack overflow"`,
		"grow":     `"code":"handler-throw","message":"Handler for tool \"hostile.grow\" threw: RuntimeError: out of bounds memory access"`,
		"oob":      `"code":"handler-throw","message":"Handler for tool \"hostile.oob\" threw: AbiError: response_write: pointer 65500 with length 100 is outside guest memory of 65536 bytes"`,
		"huge":     `"code":"output-validation-failed","message":"Tool \"hostile.huge\" handler produced output over the response size limit"`,
		"notjson":  `"code":"output-validation-failed","message":"Tool \"hostile.notjson\" handler produced output that is not JSON: `,
		"exit":     `"code":"handler-throw","message":"Handler for tool \"hostile.exit\" threw: ExitError: pack code exited with code 3"`,
		"noexport": `"code":"handler-shape-invalid","message":"Module noexport.wasm has no handler for tool \"hostile.noexport\"`,
		"counter":  `"kind":"result","output":{"global":1,"memory":1}`,
		"fill":     `"code":"deadline-exceeded","message":"hostile.fill passed its deadline: it ran out of fuel after using 20000000 units"`,
		// a table.grow by 0xfffffff0 costs more than the default budget
		"tablegrow":  `"code":"deadline-exceeded","message":"hostile.tablegrow passed its deadline: it ran out of fuel after using 10000000000 units"`,
		"loopresult": `"kind":"result","output":{"ok":true}`,
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			timeout := "30000"
			if name == "loop" || name == "sleep" {
				timeout = "300"
			}
			start := time.Now()
			r := invokeTool(t, hostileIndex, "hostile."+name, `{}`, "--timeout-ms", timeout, "--memory-limit-mib", "64")
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("exit %d stdout %s\nwant it to contain %s", r.code, r.stdout, want)
			}
			if wantCode := map[bool]int{true: 0, false: 1}[name == "counter" || name == "loopresult"]; r.code != wantCode {
				t.Errorf("exit %d, want %d", r.code, wantCode)
			}
			if timeout == "300" && time.Since(start) > 20*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}

func TestCheckCommand(t *testing.T) {
	r := packd(t, "check", "--index", conformance)
	if r.code != 0 || r.stdout != "ok: pack conformance 1.0.0, 9 tool(s), 2 check(s)\n" {
		t.Fatalf("conformance: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = packd(t, "check", "--index", hostileIndex)
	if r.code != 1 || !strings.Contains(r.stdout, `noexport.wasm: describing module: sandbox: missing export: module does not export "kindgi_call"`) {
		t.Fatalf("hostile: %d %q", r.code, r.stdout)
	}
	// Modules that are invalid as written, and load-time code that sleeps
	// or spins, are load problems, all of them, in bounded time.
	start := time.Now()
	r = packd(t, "check", "--index", hostileLoadIndex, "--load-timeout", "300ms", "--load-fuel", "100000000")
	for _, want := range []string{
		"fuelwrite.wasm: compiling module: sandbox: invalid module: instrument: function 3: global index 0 out of range (0)",
		"fuelexport.wasm: compiling module: sandbox: invalid module: instrument: export section: exported global index 0 out of range (0)",
		"fuelunreachable.wasm: compiling module: sandbox: invalid module: ",
		"localtmp.wasm: compiling module: sandbox: invalid module: instrument: function 3: local index 0 out of range (0)",
		"describesleep.wasm: describing module: sandbox: load-time code over its limit: its start function, _initialize and kindgi_describe ran over the load timeout of 300ms (packd's --load-timeout; docs/operations.md)",
		"describespin.wasm: describing module: sandbox: load-time code over its limit: its start function, _initialize and kindgi_describe ran over the load fuel of 100000000 (packd's --load-fuel; a TypeScript pack's zod schemas are built there: docs/operations.md)",
		"startspin.wasm: describing module: sandbox: load-time code over its limit: ",
		"manyloops.wasm: compiling module: sandbox: invalid module: instrument: over a limit: more than 2000 loops (function 2)",
		"command.wasm: describing module: sandbox: missing export: the module is a WASI command (it exports _start, not _initialize), and packd runs reactors: build a Go pack with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o pack.wasm .`",
		"initpanic.wasm: describing module: _initialize: wasm trap: unreachable; the guest wrote: panic: the config is missing: set ACME_URL\n",
	} {
		if r.code != 1 || !strings.Contains(r.stdout, want) {
			t.Errorf("load problems: exit %d, stdout %s\nwant a line starting %s", r.code, r.stdout, want)
		}
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("load problems took %v", d)
	}
	r = packd(t, "check", "--index", filepath.Join(t.TempDir(), "none.json"))
	if r.code != 1 || !strings.Contains(r.stdout, "Cannot read the pack index: ") {
		t.Fatalf("missing index: %d %q", r.code, r.stdout)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"invoke", "--index", conformance},
		{"invoke", "--index", conformance, "--tool", "a", "--check", "b"},
		{"invoke", "--index", conformance, "--tool", "conformance.echo", "--input", "{nope"},
		{"invoke", "--index", conformance, "--tool", "conformance.echo", "--input", "@/does/not/exist"},
		{"invoke", "--index", conformance, "--tool", "conformance.echo", "--timeout-ms", "0"},
		{"invoke", "--index", conformance, "--tool", "conformance.echo", "--memory-limit-mib", "0"},
		{"invoke", "--index", conformance, "--tool", "conformance.echo", "--fuel", "0"},
		{"invoke", "--bogus-flag"},
		{"nonsense"},
	} {
		if r := packd(t, args...); r.code != 2 || r.stdout != "" {
			t.Errorf("%q: exit %d stdout %q", args, r.code, r.stdout)
		}
	}
	t.Setenv("KINDGI_PACK_SERVICE_TOKEN", "")
	if r := packd(t); r.code != 1 || !strings.Contains(r.stderr, `"kind":"config-invalid"`) {
		t.Errorf("no arguments serves, and without a token the config is invalid: exit %d %s", r.code, r.stderr)
	}
}

// TestInvokeChargesWhatServeCharges: packd invoke runs its call from the
// module's snapshot, as a pooled serve call does, so the Go, C and
// TypeScript echo packs' fuel from invoke is the serve call's (before,
// invoke ran a fresh instance and charged _initialize to the call: 57.6 M
// fuel for Go's echo against 0.12 M); --pool-size 0 says it measures a
// fresh instance. C and TypeScript agree to the unit; Go within 0.1%: its
// runtime draws its map hash seed in _initialize, so two processes'
// snapshots hash differently (125,143 or 125,203 units, seen in either).
func TestInvokeChargesWhatServeCharges(t *testing.T) {
	for _, ex := range []string{"echo", "c-echo", "ts-echo"} {
		t.Run(ex, func(t *testing.T) {
			index := filepath.Join("..", "..", "wasm-examples", ex, "index.json")
			s := start(t, index, nil)
			body := invokeBody("echo.message", "", `{"message":"fuel"}`, `{"tenantId":"cli","runId":"cli"}`)
			for range 2 { // the first and a later call of the pool
				if r := s.invoke(t, body); r.status != 200 {
					t.Fatalf("serve: %d %s", r.status, r.body)
				}
			}
			var served []string
			for range 100 {
				served = served[:0]
				for _, l := range s.stderr.snapshot() {
					if kindIs("call")(l) {
						served = append(served, fmt.Sprint(record(t, l)["fuel"]))
					}
				}
				if len(served) == 2 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(served) != 2 || served[0] != served[1] {
				t.Fatalf("serve's calls burnt %v", served)
			}
			r := packd(t, "invoke", "--index", index, "--cache-dir", cacheDir, "--tool", "echo.message", "--input", `{"message":"fuel"}`)
			var used int64
			i := strings.Index(r.stderr, "packd invoke: fuel used: ")
			if i < 0 || r.code != 0 {
				t.Fatalf("invoke: %d\n%s", r.code, r.stderr)
			}
			if _, err := fmt.Sscanf(r.stderr[i:], "packd invoke: fuel used: %d (from the snapshot, as a pooled serve call)", &used); err != nil {
				t.Fatalf("invoke: %v\n%s", err, r.stderr)
			}
			want, _ := strconv.ParseInt(served[0], 10, 64)
			tolerance := int64(0)
			if ex == "echo" {
				tolerance = want / 1000
			}
			if d := used - want; d > tolerance || -d > tolerance {
				t.Errorf("invoke burnt %d, a pooled serve call %d", used, want)
			}
			r = packd(t, "invoke", "--index", index, "--cache-dir", cacheDir, "--tool", "echo.message", "--input", `{"message":"fuel"}`, "--pool-size", "0")
			if r.code != 0 || !strings.Contains(r.stderr, "(a fresh instance: its _initialize is charged to the call") {
				t.Errorf("invoke --pool-size 0: %d\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestAFailingCallIsNotABaseline: packd invoke --record records a call
// that answers a result, and not one that fails (a record replays as
// "identical" whatever the call answered, so make test would hold the
// failure as the baseline), unless --record-failed asks for it.
func TestAFailingCallIsNotABaseline(t *testing.T) {
	dir := t.TempDir()
	r := packd(t, "invoke", "--index", conformance, "--cache-dir", cacheDir, "--tool", "conformance.throws", "--record", dir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if r.code != 1 || len(files) != 0 || !strings.Contains(r.stderr, "the call failed (handler-throw): not recorded (--record-failed records it anyway)") {
		t.Fatalf("a throw: %d, %d records\n%s", r.code, len(files), r.stderr)
	}
	r = packd(t, "invoke", "--index", conformance, "--cache-dir", cacheDir, "--tool", "conformance.throws", "--record", dir, "--record-failed")
	if files, _ = filepath.Glob(filepath.Join(dir, "*.json")); r.code != 1 || len(files) != 1 {
		t.Fatalf("a throw with --record-failed: %d, %d records\n%s", r.code, len(files), r.stderr)
	}
	r = packd(t, "invoke", "--index", conformance, "--cache-dir", cacheDir, "--tool", "conformance.echo", "--input", `{"message":"ok"}`, "--record", dir)
	if files, _ = filepath.Glob(filepath.Join(dir, "*.json")); r.code != 0 || len(files) != 2 {
		t.Fatalf("a result: %d, %d records\n%s", r.code, len(files), r.stderr)
	}
}

// TestTheCLIPointsTheWay: flags may follow a command's other arguments
// (packd init DIR --lang c, as the usage shows it); a misspelt flag gets
// the nearest one, a tool id the pack lacks the nearest it has, a bad
// --input where it breaks (not a package's name); a 401 names the header
// the token goes in.
func TestTheCLIPointsTheWay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "late-flags")
	if r := packdProc(t, "init", dir, "--lang", "c"); r.code != 0 {
		t.Fatalf("packd init DIR --lang c: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "late-flags.c")); err != nil {
		t.Errorf("init with its flag after DIR did not write a C pack: %v", err)
	}
	r := packd(t, "invoke", "--index", conformance, "--tool", "conformance.echo", "--inptu", "{}")
	if r.code != 2 || !strings.Contains(r.stderr, "did you mean --input?") {
		t.Errorf("a misspelt flag: %d %s", r.code, r.stderr)
	}
	r = packd(t, "invoke", "--index", conformance, "--cache-dir", cacheDir, "--tool", "conformance.ecoh", "--input", `{"message":"x"}`)
	if r.code != 1 || !strings.Contains(r.stderr, "packd invoke: did you mean conformance.echo?") {
		t.Errorf("a misspelt tool: %d %s", r.code, r.stderr)
	}
	r = packd(t, "invoke", "--index", conformance, "--tool", "conformance.echo", "--input", `{"message":`)
	if r.code != 2 || !strings.Contains(r.stderr, "--input is not valid JSON: unexpected end of input at line 1, column 12") || strings.Contains(r.stderr, "ojson") {
		t.Errorf("bad JSON: %d %s", r.code, r.stderr)
	}
	s := start(t, conformance, nil)
	if res := s.do(t, "POST", "/v1/invoke", "{}", map[string]string{"content-type": "application/json"}); res.status != 401 || res.header.Get("WWW-Authenticate") != "Kindgi-Pack-Token" || res.body != `{"error":"Bad pack token"}` {
		t.Errorf("a 401: %d %q %s", res.status, res.header.Get("WWW-Authenticate"), res.body)
	}
}
