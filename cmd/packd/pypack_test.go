package main

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestPythonEchoServes: the echo pack written in Python (wasm-examples/
// py-echo, made by packd build-py) served over HTTP, fresh and pooled: it
// answers with its input, unicode and nesting intact, and a bad input is
// input-validation-failed with Ajv's issues before any Python runs.
func TestPythonEchoServes(t *testing.T) {
	idx := filepath.Join("..", "..", "wasm-examples", "py-echo", "index.json")
	for _, pool := range []string{"0", "auto"} {
		t.Run("pool-size "+pool, func(t *testing.T) {
			s := start(t, idx, nil, "--pool-size", pool)
			for i := 0; i < 2; i++ {
				// As JSON.stringify does (kindgi's pack service), U+2028 is
				// answered as it is, not escaped.
				expect(t, s.invoke(t, invokeBody("echo.echo", "", `{"a":[1,2.5,{"b":"ü\u2028"}],"n":null,"t":true}`, conformanceCtx)), 200,
					`{"v":2,"kind":"result","output":{"a":[1,2.5,{"b":"ü`+"\u2028"+`"}],"n":null,"t":true}}`)
				expect(t, s.invoke(t, invokeBody("echo.message", "", `{"message":"hi"}`, conformanceCtx)), 200,
					`{"v":2,"kind":"result","output":{"message":"hi"}}`)
			}
			expect(t, s.invoke(t, invokeBody("echo.message", "", `{"message":""}`, conformanceCtx)), 200,
				`{"v":2,"kind":"error","code":"input-validation-failed","message":"Tool \"echo.message\" input failed validation","toolId":"echo.message","issues":[`+
					`{"instancePath":"/message","schemaPath":"#/properties/message/minLength","keyword":"minLength","params":{"limit":1},"message":"must NOT have fewer than 1 characters"}]}`)
		})
	}
}

// TestBuildPy: packd build-py refuses what is not a pack's Python with a
// clear error, and makes a module of a directory's modules (named from
// it, as from a sys.path entry), imported at start but for the helpers,
// and without the tests.
func TestBuildPy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pack/tools/echo.py", "from packd_sdk import define_tool\nfrom _helper import answer\nfrom tools import NAME\ndefine_tool(id=NAME, handler=lambda input: answer(input))\n")
	write("pack/tools/__init__.py", "NAME = 'p.t'\n")
	write("pack/_helper.py", "def answer(input):\n    return {'got': input}\n")
	write("pack/test_tools.py", "raise SystemExit('a test is not part of the pack')\n")
	write("pack/tools/echo_test.py", "raise SystemExit('nor is this')\n")
	write("pack/tests/test_more.py", "raise SystemExit('nor this')\n")
	write("pack/__init__.py", "raise SystemExit('the directory is the root of the pack, not a package')\n")
	out := filepath.Join(dir, "pack.wasm")
	if r := packd(t, "build-py", "-o", out, filepath.Join(dir, "pack")); r.code != 0 {
		t.Fatalf("build-py: %d %s", r.code, r.stderr)
	}
	write("index.json", `{"v":1,"packId":"p","packVersion":"1.0.0","artifactVersion":"p-1","publishedAt":"2026-12-06T00:00:00.000Z",`+
		`"tools":[{"id":"p.t","input":{"type":"object"},"output":{},"modulePath":"pack.wasm"}],"guardrails":[],"agents":[],"flows":[]}`)
	r := invokeTool(t, filepath.Join(dir, "index.json"), "p.t", `{"x":1}`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"v":2,"kind":"result","output":{"got":{"x":1}}}` {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}

	// A pack whose import raises does not load; packd says what was
	// raised, and where in the pack.
	write("broken/tool.py", "from packd_sdk import define_tool\n\ndefine_tool(id='x.y', handler=lambda i: i, input={'default': {1, 2}})\n")
	if r := packd(t, "build-py", "-o", filepath.Join(dir, "broken.wasm"), filepath.Join(dir, "broken")); r.code != 0 {
		t.Fatalf("build-py: %d %s", r.code, r.stderr)
	}
	write("broken.json", `{"v":1,"packId":"x","packVersion":"1.0.0","artifactVersion":"x-1","publishedAt":"2026-12-06T00:00:00.000Z",`+
		`"tools":[{"id":"x.y","input":{"type":"object"},"output":{},"modulePath":"broken.wasm"}],"guardrails":[],"agents":[],"flows":[]}`)
	r = invokeTool(t, filepath.Join(dir, "broken.json"), "x.y", `{}`)
	if want := "importing tool failed: TypeError: tool 'x.y': its spec is not JSON: Object of type set is not JSON serializable (tool.py, line 3)"; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("exit %d: %s\nstderr %s\nwant %s", r.code, r.stdout, r.stderr, want)
	}

	write("bad/latin1.py", "s = '\xe9'\n")
	write("helpers/_only.py", "x = 1\n")
	write("names/my-tool.py", "x = 1\n")
	for _, c := range []struct{ src, want string }{
		{filepath.Join(dir, "bad"), "is not UTF-8"},
		{filepath.Join(dir, "helpers"), "no module to import"},
		{filepath.Join(dir, "names"), `"my-tool" is not a Python module name`},
		{filepath.Join(dir, "missing"), "no such file"},
		{filepath.Join(dir, "index.json"), "is not a .py file or a directory"},
	} {
		if r := packd(t, "build-py", "-o", out, c.src); r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("build-py %s: exit %d, %q; want %q", c.src, r.code, r.stderr, c.want)
		}
	}
}

// TestPyHostile: Python that recurses, nests past the C stack, makes a
// huge int's digits, backtracks, spins, drains an endless generator or
// allocates past the limit is stopped within its call's stack, fuel,
// deadline and memory, each with its protocol error, and packd goes on
// serving (testdata/pyhostile).
func TestPyHostile(t *testing.T) {
	idx := indexedCopy(t, "pyhostile", "hostile.wasm", "pyhostile")
	s := start(t, idx, nil, "--memory-limit-mib", "64")
	for _, c := range []struct{ name, timeout, want string }{
		{"recurse", "", `"code":"handler-throw","message":"Handler for tool \"pyhostile.recurse\" threw: RecursionError: maximum recursion depth exceeded"`},
		{"nested", "", `"code":"handler-throw","message":"Handler for tool \"pyhostile.nested\" threw: RecursionError: maximum recursion depth exceeded`},
		{"bigint", "", `"code":"handler-throw","message":"Handler for tool \"pyhostile.bigint\" threw: ValueError: Exceeds the limit (4300 digits) for integer string conversion`},
		// A spin ends by its fuel or its deadline, whichever comes first.
		{"backtrack", "2000", `"code":"deadline-exceeded","message":"pyhostile.backtrack passed its deadline`},
		{"loop", "2000", `"code":"deadline-exceeded","message":"pyhostile.loop passed its deadline`},
		{"endless", "", `{"v":2,"kind":"error","code":"`},
		// Growing memory past the limit is charged before it is refused:
		// the fuel of a 1 GiB allocation runs out first.
		{"alloc", "", `"code":"deadline-exceeded","message":"pyhostile.alloc passed its deadline`},
		// asyncio's loop sleeps under the call's deadline, and a swarm of
		// tasks ends by its fuel, memory or deadline.
		{"asleep", "1000", `"code":"deadline-exceeded","message":"pyhostile.asleep passed its deadline`},
		{"swarm", "2000", `"code":"deadline-exceeded","message":"pyhostile.swarm passed its deadline`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var extra []string
			if c.timeout != "" {
				extra = []string{"kindgi-timeout-ms", c.timeout}
			}
			r := s.invoke(t, invokeBody("pyhostile."+c.name, "", `{}`, conformanceCtx), extra...)
			if r.status != 200 || !strings.Contains(r.body, c.want) {
				t.Fatalf("%d %s, want %s", r.status, r.body, c.want)
			}
			// And the pack still answers.
			expect(t, s.invoke(t, invokeBody("pyhostile.ok", "", `{"n":1}`, conformanceCtx)), 200, `{"v":2,"kind":"result","output":{"n":1}}`)
		})
	}
}

// TestPyFetch: a Python tool whose input is a dataclass (its schema in the
// index, made by packd_sdk; a bad input refused with Ajv's issues) reaches
// an allowlisted loopback server through
// packd's egress (packd_sdk.fetch), with a bearer token from the call's
// secrets; a host off the allowlist is refused with its reason, which the
// tool answers; a raise of the pack's own exception class is handler-throw
// with its name; and packd index writes the tool's network from what the
// module describes.
func TestPyFetch(t *testing.T) {
	srv := seenUpstream(t)
	idx := indexedCopy(t, "pynet", "net.wasm", "net")
	// The dataclass's schema, as packd_sdk.schema_of makes it.
	if input, network := netFetchSpec(t, idx); input != `{"additionalProperties":false,"properties":{"body":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null},"method":{"default":"GET","enum":["GET","POST"]},"url":{"minLength":1,"type":"string"}},"required":["url"],"type":"object"}` ||
		network != `{"hosts":["127.0.0.1"],"kind":"allowlist"}` {
		t.Fatalf("net.fetch in the index: input %s, network %s", input, network)
	}
	s := start(t, idx, map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8"})
	ctx := `{"tenantId":"t","runId":"r","secrets":{"apiToken":"tok"}}`
	bad := s.invoke(t, invokeBody("net.fetch", "", `{"url":7,"extra":true}`, conformanceCtx))
	for _, want := range []string{`"code":"input-validation-failed"`,
		`{"instancePath":"","schemaPath":"#/additionalProperties","keyword":"additionalProperties","params":{"additionalProperty":"extra"},"message":"must NOT have additional properties"}`,
		`{"instancePath":"/url","schemaPath":"#/properties/url/type","keyword":"type","params":{"type":"string"},"message":"must be string"}`} {
		if bad.status != 200 || !strings.Contains(bad.body, want) {
			t.Fatalf("a bad input: %d %s, want %s", bad.status, bad.body, want)
		}
	}
	for _, pooled := range []string{"first", "again"} {
		t.Run(pooled, func(t *testing.T) {
			expect(t, s.invoke(t, invokeBody("net.fetch", "", `{"url":"`+srv.URL+`/ping","method":"POST","body":"hi"}`, ctx)), 200,
				`{"v":2,"kind":"result","output":{"status":200,"body":"pong","seen":"POST Bearer tok hi"}}`)
			// The schema's default reached the handler (the host fills it in).
			expect(t, s.invoke(t, invokeBody("net.fetch", "", `{"url":"`+srv.URL+`/ping"}`, ctx)), 200,
				`{"v":2,"kind":"result","output":{"status":200,"body":"pong","seen":"GET Bearer tok"}}`)
			expect(t, s.invoke(t, invokeBody("net.fetch", "", `{"url":"http://example.com/"}`, ctx)), 200,
				`{"v":2,"kind":"result","output":{"reason":"host-not-allowed","message":"example.com is not on this tool's allowlist"}}`)
		})
	}
	r := s.invoke(t, invokeBody("net.throws", "", `{}`, conformanceCtx))
	if r.status != 200 || !strings.Contains(r.body, `"code":"handler-throw","message":"Handler for tool \"net.throws\" threw: LedgerError: the ledger is closed"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}

	// A recorded Python call replays exactly, its fetch answered from the
	// tape, with the server gone.
	dir := t.TempDir()
	inv := packdProc(t, "invoke", "--index", idx, "--network-allow", "127.0.0.0/8", "--tool", "net.fetch",
		"--input", `{"url":"`+srv.URL+`/ping","method":"POST","body":"hi"}`, "--ctx", ctx, "--record", dir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if inv.code != 0 || len(files) != 1 || !strings.Contains(inv.stdout, `"seen":"POST Bearer tok hi"`) {
		t.Fatalf("packd invoke --record: %d %s %s", inv.code, inv.stdout, inv.stderr)
	}
	srv.Close()
	if rep := replayProc(t, nil, "--index", idx, dir); rep.code != 0 || !strings.Contains(rep.stdout, "identical  "+files[0]) {
		t.Fatalf("packd replay: %d %s %s", rep.code, rep.stdout, rep.stderr)
	}
}

// TestInitPyPack: packd init --lang py writes a Python pack that builds
// with nothing but packd (the runtime is in it), indexes from what the
// module describes, answers its tool and check, and whose make test runs
// its tests on the host's python3 and replays its recorded call, from a
// fresh clone (no module).
func TestInitPyPack(t *testing.T) {
	for _, tool := range []string{"python3", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: the test needs it (scripts/deps installs it)", tool)
		}
	}
	dir := filepath.Join(t.TempDir(), "acme.hello-py")
	if r := packd(t, "init", "--lang", "py", dir); r.code != 0 {
		t.Fatalf("packd init: %d %s", r.code, r.stderr)
	}
	for _, f := range []string{"tools/greet.py", "guardrails/not_empty.py", "tests/test_pack.py", "packd_sdk/__init__.py", "Makefile", "index.json", "hello-py.wasm"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("packd init did not write %s", f)
		}
	}
	index := filepath.Join(dir, "index.json")
	if r := packd(t, "check", "--index", index); r.code != 0 {
		t.Fatalf("packd check: %s %s", r.stdout, r.stderr)
	}
	raw, _ := os.ReadFile(index)
	if !strings.Contains(string(raw), `"description": "Who to greet."`) || !strings.Contains(string(raw), `"checkId": "acme.hello-py.checks.not-empty"`) && !strings.Contains(string(raw), `"id": "acme.hello-py.checks.not-empty"`) {
		t.Errorf("the index lacks the tool's schema or the check: %s", raw)
	}
	r := packd(t, "invoke", "--index", index, "--tool", "acme.hello-py.greet", "--input", `{"name":"Ad\u00e1"}`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"v":2,"kind":"result","output":{"greeting":"Hello, Adá!"}}` {
		t.Fatalf("packd invoke: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = packd(t, "invoke", "--index", index, "--check", "acme.hello-py.checks.not-empty", "--config", `{}`, "--trace", `{"output":" "}`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"v":2,"kind":"check-result","result":{"passed":false,"reason":"too short"}}` {
		t.Fatalf("packd invoke --check: %d %s %s", r.code, r.stdout, r.stderr)
	}
	freshClone(t, dir)
	test := exec.Command("make", "test", "PACKD="+packdPath)
	test.Dir = dir
	test.Env = withoutMake(os.Environ())
	if out, err := test.CombinedOutput(); err != nil || !strings.Contains(string(out), "Ran 2 tests") || !strings.Contains(string(out), "1 of 1 records replayed identically") {
		t.Fatalf("make test in the new pack: %v\n%s", err, out)
	}
}

// TestDevRebuildsAPythonPack: packd dev serves a pack packd init --lang py
// made (its Makefile: build-py, then packd index), and rebuilds and reloads
// it when a .py file changes; an edit that does not import (a SyntaxError)
// fails the build naming its file and line, and the last good pack serves
// on.
func TestDevRebuildsAPythonPack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "devpy")
	if r := packdProc(t, "init", "--lang", "py", dir); r.code != 0 {
		t.Fatalf("packd init: %d %s", r.code, r.stderr)
	}
	s := startDev(t, dir)
	greet := func() string {
		t.Helper()
		r := s.invoke(t, invokeBody("devpy.greet", "", `{"name":"Ada"}`, `{"tenantId":"t","runId":"r"}`))
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return r.body
	}
	if got := greet(); got != `{"v":2,"kind":"result","output":{"greeting":"Hello, Ada!"}}` {
		t.Fatalf("before the edit: %s", got)
	}
	greetPy := filepath.Join(dir, "tools", "greet.py")
	s.edit(t, greetPy, `"Hello, %s!"`, `"Howdy, %s!"`, kindIs("reloaded"))
	if got := greet(); got != `{"v":2,"kind":"result","output":{"greeting":"Howdy, Ada!"}}` {
		t.Fatalf("after the edit: %s", got)
	}
	// The build (make: build-py, then packd index, which loads the module)
	// fails at the import.
	all := s.edit(t, greetPy, `"Howdy, %s!"`, `"Howdy, %s!" +`, has("packd dev: the build failed"))
	if !strings.Contains(all, "importing tools.greet failed: SyntaxError: invalid syntax (tools/greet.py, line 9)") {
		t.Fatalf("the failed build names no SyntaxError at tools/greet.py, line 9:\n%s", all)
	}
	if got := greet(); !strings.Contains(got, "Howdy, Ada!") {
		t.Fatalf("after an edit that does not import: %s", got)
	}
}

// TestPyBoundCredential: a credential the index binds to a host reaches
// that host from a Python tool's fetch in the header packd writes, while
// the pack never holds it: not in its ctx, and the host's echo of it
// reaches the pack redacted.
func TestPyBoundCredential(t *testing.T) {
	const secret = "py-s3cret-VALUE-77c1"
	var mu sync.Mutex
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Get("Authorization")
		mu.Unlock()
		io.WriteString(w, "auth="+r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pynet", "net.wasm"))
	if err != nil {
		t.Fatalf("%v (make builds testdata/pynet/net.wasm)", err)
	}
	dir := t.TempDir()
	index := `{"v":1,"packId":"net","packVersion":"1.0.0","artifactVersion":"net-1","publishedAt":"2026-12-06T00:00:00.000Z","agents":[],"flows":[],"guardrails":[],"tools":[` +
		`{"id":"net.fetch","input":{"type":"object"},"output":{"type":"object"},"modulePath":"net.wasm","network":{"kind":"allowlist","hosts":["127.0.0.1"],` +
		`"credentials":{"127.0.0.1":{"secret":"apiToken","scheme":"Bearer"}}}}]}`
	for name, data := range map[string][]byte{"index.json": []byte(index), "net.wasm": wasm} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := start(t, filepath.Join(dir, "index.json"), map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8"})
	r := s.invoke(t, invokeBody("net.fetch", "", `{"url":"`+srv.URL+`/x"}`, `{"tenantId":"t","runId":"r","secrets":{"apiToken":"`+secret+`"}}`))
	mu.Lock()
	defer mu.Unlock()
	if got != "Bearer "+secret {
		t.Fatalf("the bound host got Authorization %q", got)
	}
	if r.status != 200 || strings.Contains(r.body, secret) || !strings.Contains(r.body, `"body":"auth=[credential redacted by packd]"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestPyStandardLibrary: a pack's module carries the standard library
// modules its sources import that the runtime does not (tomllib,
// ipaddress, xml.etree, email here), and they work in it; build-py says
// which imports packd's Python cannot satisfy, and the pack still builds
// (a guarded import goes on without them).
func TestPyStandardLibrary(t *testing.T) {
	dir := t.TempDir()
	src := `from packd_sdk import define_tool
import ipaddress, tomllib
import xml.etree.ElementTree as ET
from email import message_from_string
try:
    import requests
except ImportError:
    requests = None
try:
    import sqlite3
except ImportError:
    sqlite3 = None


def run(input):
    msg = message_from_string(input["mail"])
    return {
        "toml": tomllib.loads(input["toml"]),
        "private": ipaddress.ip_address(input["ip"]).is_private,
        "xml": [e.get("n") for e in ET.fromstring(input["xml"]).iter("i")],
        "subject": msg["Subject"],
        "requests": requests is not None,
        "sqlite3": sqlite3 is not None,
    }


define_tool(id="lib.run", handler=run)
`
	if err := os.MkdirAll(filepath.Join(dir, "pack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pack", "tools.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pack.wasm")
	r := packd(t, "build-py", "-o", out, filepath.Join(dir, "pack"))
	if r.code != 0 {
		t.Fatalf("build-py: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"imports sqlite3, which packd's Python leaves out", "imports requests, neither in the pack nor in Python's standard library"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("build-py's warnings: %q, want %q", r.stderr, want)
		}
	}
	index := filepath.Join(dir, "index.json")
	if err := os.WriteFile(index, []byte(`{"v":1,"packId":"lib","packVersion":"1.0.0","artifactVersion":"lib-1","publishedAt":"2026-12-06T00:00:00.000Z",`+
		`"tools":[{"id":"lib.run","input":{"type":"object"},"output":{},"modulePath":"pack.wasm"}],"guardrails":[],"agents":[],"flows":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	input := `{"toml":"a = 1\n[t]\nb = \"c\"\n","ip":"10.1.2.3","xml":"<r><i n=\"x\"/><i n=\"y\"/></r>","mail":"Subject: hi\n\nbody\n"}`
	r = invokeTool(t, index, "lib.run", input)
	want := `{"v":2,"kind":"result","output":{"toml":{"a":1,"t":{"b":"c"}},"private":true,"xml":["x","y"],"subject":"hi","requests":false,"sqlite3":false}}`
	if r.code != 0 || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("exit %d: %s\nstderr %s\nwant %s", r.code, r.stdout, r.stderr, want)
	}
}

// TestPyAsyncio: a pack that imports asyncio awaits its sleeps, tasks,
// gathers and timeouts in an async def handler (the loop is packd's: it
// sleeps until the next timer, under the call's deadline); a handler that
// awaits what nothing will complete is a handler-throw that says so, not a
// call that hangs; a process or a thread is an error the handler gets.
func TestPyAsyncio(t *testing.T) {
	dir := t.TempDir()
	src := `import asyncio, subprocess
from packd_sdk import define_tool


async def later(n):
    await asyncio.sleep(0.01 * n)
    return n * n


async def run(input):
    mode = input["mode"]
    if mode == "gather":
        task = asyncio.create_task(later(3))
        got = await asyncio.gather(later(1), later(2))
        return {"gathered": got, "task": await task}
    if mode == "timeout":
        try:
            await asyncio.wait_for(asyncio.sleep(10), timeout=0.02)
        except asyncio.TimeoutError:
            return {"timedOut": True}
    if mode == "forever":
        await asyncio.get_running_loop().create_future()
    if mode == "thread":
        await asyncio.to_thread(print, "from a thread")
    if mode == "process":
        subprocess.run(["true"])
    return {"mode": mode}


def sync_run(input):
    return {"ran": asyncio.run(later(input["n"]))}


define_tool(id="aio.run", handler=run)
define_tool(id="aio.sync", handler=sync_run)
`
	if err := os.MkdirAll(filepath.Join(dir, "pack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pack", "tools.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := packd(t, "build-py", "-o", filepath.Join(dir, "pack.wasm"), filepath.Join(dir, "pack")); r.code != 0 || r.stderr != "" {
		t.Fatalf("build-py: %d %s", r.code, r.stderr)
	}
	index := filepath.Join(dir, "index.json")
	if err := os.WriteFile(index, []byte(`{"v":1,"packId":"aio","packVersion":"1.0.0","artifactVersion":"aio-1","publishedAt":"2026-12-06T00:00:00.000Z",`+
		`"tools":[{"id":"aio.run","input":{"type":"object"},"output":{},"modulePath":"pack.wasm"},{"id":"aio.sync","input":{"type":"object"},"output":{},"modulePath":"pack.wasm"}],"guardrails":[],"agents":[],"flows":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, input, want string }{
		{"aio.run", `{"mode":"gather"}`, `"output":{"gathered":[1,4],"task":9}`},
		{"aio.run", `{"mode":"timeout"}`, `"output":{"timedOut":true}`},
		{"aio.sync", `{"n":5}`, `"output":{"ran":25}`},
		{"aio.run", `{"mode":"forever"}`, `"code":"handler-throw","message":"Handler for tool \"aio.run\" threw: RuntimeError: the handler awaits something nothing will complete`},
		{"aio.run", `{"mode":"thread"}`, `"code":"handler-throw","message":"Handler for tool \"aio.run\" threw: RuntimeError: can't start new thread`},
		{"aio.run", `{"mode":"process"}`, `"code":"handler-throw","message":"Handler for tool \"aio.run\" threw: OSError: [Errno 58] wasi does not support processes.`},
	} {
		r := invokeTool(t, index, c.tool, c.input)
		if !strings.Contains(r.stdout, c.want) {
			t.Errorf("%s %s: exit %d: %s\nstderr %s\nwant %s", c.tool, c.input, r.code, r.stdout, r.stderr, c.want)
		}
	}
}

// TestPyLibraryImports: every module of the library build-py takes from
// imports in packd (none needs a module packd's Python leaves out, or
// one it does not have), in one pack that imports them all.
func TestPyLibraryImports(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "sdk", "py", "runtime", "library.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var lib struct {
		Modules map[string]json.RawMessage `json:"modules"`
	}
	if err := json.NewDecoder(zr).Decode(&lib); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(lib.Modules))
	if len(names) < 200 {
		t.Fatalf("the library holds %d modules", len(names))
	}
	var src strings.Builder
	src.WriteString("from packd_sdk import define_tool\nFAILED = {}\n")
	for _, n := range names {
		fmt.Fprintf(&src, "try:\n    import %s\nexcept BaseException as e:\n    FAILED[%q] = '%%s: %%s' %% (type(e).__name__, e)\n", n, n)
	}
	src.WriteString("define_tool(id='lib.failed', handler=lambda input: FAILED)\n")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pack", "tools.py"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	wasm := filepath.Join(dir, "pack.wasm")
	if r := packd(t, "build-py", "-o", wasm, filepath.Join(dir, "pack")); r.code != 0 || r.stderr != "" {
		t.Fatalf("build-py: %d %s", r.code, r.stderr)
	}
	// Importing them all takes more than a pack's default load fuel.
	index := filepath.Join(dir, "index.json")
	if r := packd(t, "index", "--load-fuel", "100000000000", "--index", index, "--pack-id", "lib", wasm); r.code != 0 {
		t.Fatalf("packd index: %d %s", r.code, r.stderr)
	}
	r := packd(t, "invoke", "--load-fuel", "100000000000", "--index", index, "--tool", "lib.failed")
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"v":2,"kind":"result","output":{}}` {
		t.Fatalf("modules of the library that do not import in packd: %d %s %s", r.code, r.stdout, r.stderr)
	}
}
