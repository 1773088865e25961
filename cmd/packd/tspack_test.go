package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServiceConformancePackTS: the conformance suite over HTTP against
// the fixture pack written in TypeScript (sdk/js), fresh and pooled.
func TestServiceConformancePackTS(t *testing.T) {
	for _, pool := range []string{"0", "auto"} {
		t.Run("pool-size "+pool, func(t *testing.T) {
			s := start(t, tsConformance, map[string]string{"CONFORMANCE_VISIBLE": "1", "UNDECLARED_SECRET": "x"}, "--pool-size", pool)
			conformanceOverHTTP(t, s)
		})
	}
}

// TestServiceConformancePackPy: the conformance suite over HTTP against
// the fixture pack written in Python (sdk/py), fresh and pooled.
func TestServiceConformancePackPy(t *testing.T) {
	for _, pool := range []string{"0", "auto"} {
		t.Run("pool-size "+pool, func(t *testing.T) {
			s := start(t, pyConformance, map[string]string{"CONFORMANCE_VISIBLE": "1", "UNDECLARED_SECRET": "x"}, "--pool-size", pool)
			conformanceOverHTTP(t, s)
		})
	}
}

// TestJSThrowHasItsStack: a JavaScript throw reaches the caller with the
// stack QuickJS recorded (its frames, which the suite leaves out when it
// compares the TypeScript fixture with the Go one), headed as Node heads
// one: "Error: boom".
func TestJSThrowHasItsStack(t *testing.T) {
	r := invokeTool(t, tsConformance, "conformance.throws", `{}`)
	var msg struct {
		Cause struct{ Name, Message, Stack string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &msg); err != nil || r.code != 1 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if c := msg.Cause; c.Name != "Error" || c.Message != "boom" || !strings.HasPrefix(c.Stack, "Error: boom\n    at ") || !strings.Contains(c.Stack, "(pack.js") {
		t.Fatalf("cause %+v", c)
	}
}

// TestTSPack: a pack written in TypeScript with zod schemas, indexed by
// packd index from what the module describes (zod's JSON Schema, made
// inside the sandbox), served: a bad input is input-validation-failed with
// Ajv's issues, a throw of a subclass of Error is handler-throw with its
// name, and an await fetch() of an allowlisted loopback server answers.
func TestTSPack(t *testing.T) {
	srv := seenUpstream(t)
	idx := indexedCopy(t, "jsnet", "net.wasm", "net")
	if input, network := netFetchSpec(t, idx); input != `{"additionalProperties":false,"properties":{"body":{"type":"string"},"method":{"default":"GET","enum":["GET","POST"],"type":"string"},"nonce":{"type":"boolean"},"url":{"minLength":1,"type":"string"}},"required":["url"],"type":"object"}` ||
		network != `{"hosts":["127.0.0.1"],"kind":"allowlist"}` {
		t.Fatalf("net.fetch in the index: input %s, network %s", input, network)
	}

	s := start(t, idx, map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8"})
	expect(t, s.invoke(t, invokeBody("net.fetch", "", `{"url":7,"extra":true}`, conformanceCtx)), 200,
		`{"v":2,"kind":"error","code":"input-validation-failed","message":"Tool \"net.fetch\" input failed validation","toolId":"net.fetch","issues":[`+
			`{"instancePath":"","schemaPath":"#/additionalProperties","keyword":"additionalProperties","params":{"additionalProperty":"extra"},"message":"must NOT have additional properties"},`+
			`{"instancePath":"/url","schemaPath":"#/properties/url/type","keyword":"type","params":{"type":"string"},"message":"must be string"}]}`)
	expect(t, s.invoke(t, invokeBody("net.throws", "", `{}`, conformanceCtx)), 200,
		`{"v":2,"kind":"error","code":"handler-throw","message":"Handler for tool \"net.throws\" threw: LedgerError: the ledger is closed","toolId":"net.throws","cause":{"name":"LedgerError","message":"the ledger is closed","stack":"LedgerError: the ledger is closed"}}`)
	ctx := `{"tenantId":"t","runId":"r","secrets":{"apiToken":"tok"}}`
	expect(t, s.invoke(t, invokeBody("net.fetch", "", `{"url":"`+srv.URL+`/ping","method":"POST","body":"hi"}`, ctx)), 200,
		`{"v":2,"kind":"result","output":{"status":200,"body":"pong","seen":"POST Bearer tok hi"}}`)
	// zod's default reached the handler (the host fills it in too).
	expect(t, s.invoke(t, invokeBody("net.fetch", "", `{"url":"`+srv.URL+`/ping"}`, ctx)), 200,
		`{"v":2,"kind":"result","output":{"status":200,"body":"pong","seen":"GET Bearer tok"}}`)
	expect(t, s.invoke(t, invokeBody("net.fetch", "", `{"url":"http://example.com/"}`, ctx)), 200,
		`{"v":2,"kind":"result","output":{"reason":"host-not-allowed","message":"example.com is not on this tool's allowlist"}}`)
}

// seenUpstream is a loopback server that answers "pong", its X-Seen
// header the method, Authorization and body of the request it got.
func seenUpstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.Header.Get("Authorization")+" "+string(body))
		io.WriteString(w, "pong")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// netFetchSpec is the input schema and network of net.fetch, the first of
// the two tools of a net test pack's index (jsnet, pynet), compacted.
func netFetchSpec(t *testing.T, idx string) (input, network string) {
	t.Helper()
	raw, _ := os.ReadFile(idx)
	var index struct {
		Tools []struct {
			ID             string
			Input, Network json.RawMessage
		}
	}
	if err := json.Unmarshal(raw, &index); err != nil || len(index.Tools) != 2 || index.Tools[0].ID != "net.fetch" {
		t.Fatalf("index: %v %s", err, raw)
	}
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		_ = json.Compact(&b, raw)
		return b.String()
	}
	return compact(index.Tools[0].Input), compact(index.Tools[0].Network)
}

// TestJSHostile: JavaScript that spins, recurses, allocates, queues jobs
// for ever, keeps a timer going or never settles is stopped within its
// call's fuel, deadline, stack and memory, each with its protocol error,
// and packd goes on serving (testdata/jshostile).
func TestJSHostile(t *testing.T) {
	idx := indexedCopy(t, "jshostile", "hostile.wasm", "jshostile")
	s := start(t, idx, nil, "--memory-limit-mib", "64")
	for _, c := range []struct{ name, timeout, want string }{
		{"loop", "2000", `"code":"deadline-exceeded","message":"jshostile.loop passed its deadline`},
		// Each job of the chain keeps the one before it: its memory or its
		// fuel runs out, whichever comes first.
		{"jobs", "2000", `{"v":2,"kind":"error","code":"`},
		{"timers", "300", `{"v":2,"kind":"error","code":"deadline-exceeded","message":"jshostile.timers passed its deadline","toolId":"jshostile.timers"}`},
		{"recurse", "", `"code":"handler-throw","message":"Handler for tool \"jshostile.recurse\" threw: InternalError: stack overflow"`},
		{"alloc", "", `"code":"handler-throw","message":"Handler for tool \"jshostile.alloc\" threw: InternalError: out of memory"`},
		{"never", "", `"code":"handler-throw","message":"Handler for tool \"jshostile.never\" threw: Error: the handler's promise never settled: nothing was left to run (no timer, no request)"`},
		{"eval", "", `{"v":2,"kind":"result","output":{"type":"number","fn":42}}`},
		{"churn", "", `{"v":2,"kind":"result","output":{"made":740081}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var extra []string
			if c.timeout != "" {
				extra = []string{"kindgi-timeout-ms", c.timeout}
			}
			r := s.invoke(t, invokeBody("jshostile."+c.name, "", `{}`, conformanceCtx), extra...)
			if r.status != 200 || !strings.Contains(r.body, c.want) {
				t.Fatalf("%d %s\nwant it to contain %s", r.status, r.body, c.want)
			}
		})
	}
	// A recursion's stack is cut at ten frames, as Node cuts one.
	r := s.invoke(t, invokeBody("jshostile.recurse", "", `{}`, conformanceCtx))
	if n := strings.Count(r.body, `\n    at `); n != 10 {
		t.Errorf("%d frames in %s", n, r.body)
	}
	expect(t, s.invoke(t, invokeBody("jshostile.json", "", `{"text":"[1,{\"a\":null}]"}`, conformanceCtx)), 200, `{"v":2,"kind":"result","output":[1,{"a":null}]}`)
}

// TestBuildJS: packd build-js writes a module beside the bundle (or at -o)
// and refuses, saying why, what makes none.
func TestBuildJS(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("pack.js", `globalThis[Symbol.for("packd")].tool({id: "x.y", version: "1.0.0", handler: () => 1});`)
	if r := packd(t, "build-js", good); r.code != 0 || r.stdout != "wrote "+filepath.Join(dir, "pack.wasm")+"\n" {
		t.Fatalf("%d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := packd(t, "index", "--index", filepath.Join(dir, "index.json"), "--pack-id", "x", filepath.Join(dir, "pack.wasm")); r.code != 0 || !strings.Contains(r.stderr, "1 tool(s)") {
		t.Fatalf("packd index of the module: %d %s", r.code, r.stderr)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"build-js"}, exitUsage, "name one bundle"},
		{[]string{"build-js", filepath.Join(dir, "none.js")}, exitError, "no such file or directory"},
		{[]string{"build-js", dir}, exitError, "is not a regular file"},
		{[]string{"build-js", write("latin1.js", "x = '\xe9';")}, exitError, "the bundle is not UTF-8"},
		{[]string{"build-js", "-o", filepath.Join(dir, "missing", "x.wasm"), good}, exitError, "no such file or directory"},
	} {
		if r := packd(t, c.args...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: %d %q, want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}

// TestJSLoadErrors: a bundle that does not parse, a top level that throws
// and a top-level promise rejection nothing handles each fail the module's
// load, the error quoted in the load problem; a rejection a call leaves
// unhandled is written on stderr and the call answers as its handler did.
func TestJSLoadErrors(t *testing.T) {
	dir := t.TempDir()
	module := func(name, js string) string {
		src := filepath.Join(dir, name+".js")
		if err := os.WriteFile(src, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := packd(t, "build-js", src); r.code != 0 {
			t.Fatalf("build-js %s: %s", name, r.stderr)
		}
		return filepath.Join(dir, name+".wasm")
	}
	for _, c := range []struct{ name, js, want string }{
		{"syntax", "const x = ;\n", `the guest wrote: pack.js: SyntaxError: unexpected token in expression: ';' (at pack.js:1)`},
		{"throws", "throw new TypeError(\"top level says no\");\n", `the guest wrote: pack.js: TypeError: top level says no`},
		{"rejects", "Promise.reject(new Error(\"later\"));\n", `the guest wrote: pack.js: a promise rejection was not handled: Error: later`},
	} {
		r := packd(t, "index", "--index", filepath.Join(dir, c.name+".json"), "--pack-id", "x", module(c.name, c.js))
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: %d %s\nwant %s", c.name, r.code, r.stderr, c.want)
		}
	}
	unhandled := module("unhandled", `globalThis[Symbol.for("packd")].tool({id: "a.b", version: "1.0.0", handler: () => {
  Promise.reject(new RangeError("nobody caught me"));
  Promise.reject(new Error("caught later")).catch(() => {});
  return 1;
}});`)
	idx := filepath.Join(dir, "unhandled.json")
	if r := packd(t, "index", "--index", idx, "--pack-id", "x", unhandled); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := packd(t, "invoke", "--index", idx, "--tool", "a.b", "--input", `{}`)
	if r.stdout != `{"v":2,"kind":"result","output":1}`+"\n" || !strings.Contains(r.stderr, "Uncaught (in promise): RangeError: nobody caught me") || strings.Contains(r.stderr, "caught later") {
		t.Fatalf("%d %q %q", r.code, r.stdout, r.stderr)
	}
}

// indexedCopy copies testdata/<dir>/<module> into a directory of the test's
// and writes its index there with packd index (pack id pack), from what the
// module describes; it answers the index's path.
func indexedCopy(t *testing.T, dir, module, pack string) string {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", dir, module))
	if err != nil {
		t.Fatalf("%v (make builds testdata/%s/%s)", err, dir, module)
	}
	to := t.TempDir()
	if err := os.WriteFile(filepath.Join(to, module), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(to, "index.json")
	if r := packd(t, "index", "--index", idx, "--pack-id", pack, filepath.Join(to, module)); r.code != 0 {
		t.Fatalf("packd index: %d %s %s", r.code, r.stdout, r.stderr)
	}
	return idx
}

// bufferBattery is JavaScript that exercises Buffer and answers what it
// saw, for TestJSBufferIsNodes to run under Node and under packd.
const bufferBattery = `const battery = () => {
  const r = [];
  const b = Buffer.from("héllo wörld ✓", "utf8");
  r.push(b.toString("hex"), b.toString("base64"), b.toString("base64url"), b.toString("latin1"), b.toString("ascii"), b.length, Buffer.byteLength("✓"), b.toString("utf8", 1, 3));
  r.push(Buffer.from("aGk=", "base64").toString(), Buffer.from("aGk", "base64url").toString(), Buffer.from("_-8", "base64url").toString("hex"), Buffer.from("6869zz", "hex").toString(), Buffer.from("é", "latin1").toString("hex"));
  r.push(JSON.stringify(Buffer.from([1, 2, 300])), Buffer.concat([Buffer.from("a"), Buffer.from("bc")]).toString(), Buffer.concat([Buffer.from("abc")], 2).toString());
  const c = Buffer.alloc(8);
  c.writeUInt32BE(0xdeadbeef, 0);
  c.writeUInt16LE(0x1234, 4);
  c.writeUInt8(255, 6);
  r.push(c.toString("hex"), c.readUInt32LE(0), c.readUInt32BE(0), c.readUInt16BE(4), c.readUInt16LE(4), c.readUInt8(6));
  r.push(Buffer.compare(Buffer.from("a"), Buffer.from("b")), Buffer.from("x").equals(Buffer.from("x")), Buffer.from("ab").compare(Buffer.from("a")), Buffer.isBuffer(c), Buffer.isBuffer(new Uint8Array(1)), Buffer.isEncoding("hex"), Buffer.isEncoding("utf16"));
  const s = b.subarray(1, 3);
  s[0] = 0x41;
  r.push(b.toString("hex").slice(0, 8), s instanceof Buffer, b.slice(0, 2).toString("hex"), b instanceof Uint8Array);
  r.push(Buffer.alloc(3, "a").toString(), Buffer.alloc(2, 7).toString("hex"), c.write("zz", 1), c.toString("hex"), c.write("é", 7, "latin1"), c.toString("hex"));
  r.push(Buffer.from({ type: "Buffer", data: [104, 105] }).toString(), JSON.stringify(Buffer.from("hi")), Buffer.from(new Uint8Array([1, 2]).buffer).toString("hex"));
  let threw = "";
  try { c.readUInt32LE(6); } catch (e) { threw = e.name; }
  r.push(threw);
  try { Buffer.from("x", "utf16"); } catch (e) { threw = e.name; }
  r.push(threw);
  return r;
};
`

// TestJSBufferIsNodes: Buffer under packd answers what Node's answers,
// over the subset GUEST-ABI.md lists (a pack that used Buffer met a
// ReferenceError at call time before).
func TestJSBufferIsNodes(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (Debian: apt-get install nodejs): make test installs it")
	}
	want, err := exec.Command(node, "-e", bufferBattery+"process.stdout.write(JSON.stringify(battery()))").Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	dir := t.TempDir()
	pack := filepath.Join(dir, "pack.js")
	if err := os.WriteFile(pack, []byte(bufferBattery+`globalThis[Symbol.for("packd")].tool({id: "b.battery", version: "1.0.0", handler: battery});`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := packd(t, "build-js", pack); r.code != 0 {
		t.Fatalf("build-js: %d %s", r.code, r.stderr)
	}
	idx := filepath.Join(dir, "index.json")
	if r := packd(t, "index", "--index", idx, "--pack-id", "b", filepath.Join(dir, "pack.wasm")); r.code != 0 {
		t.Fatalf("index: %d %s", r.code, r.stderr)
	}
	r := packd(t, "invoke", "--index", idx, "--tool", "b.battery", "--input", "{}")
	if r.code != 0 {
		t.Fatalf("invoke: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if got := strings.TrimSpace(r.stdout); got != `{"v":2,"kind":"result","output":`+string(want)+`}` {
		t.Fatalf("packd's Buffer:\n%s\nNode's:\n%s", got, want)
	}
}
