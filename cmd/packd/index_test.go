package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var helloDir = filepath.Join("..", "..", "wasm-examples", "hello")

// TestIndexWritesTheIndexFromTheModules: packd index writes a pack's index
// from what its module describes (ids, versions, descriptions, schemas
// derived from the handler's types), canonically: the committed
// wasm-examples/hello/index.json byte for byte, the same bytes when run
// again, and what the index says that the module does not (limits, env,
// agents) is kept. The index passes packd check and packd invoke answers.
func TestIndexWritesTheIndexFromTheModules(t *testing.T) {
	dir := t.TempDir()
	wasm, err := os.ReadFile(filepath.Join(helloDir, "hello.wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	_ = os.WriteFile(filepath.Join(dir, "hello.wasm"), wasm, 0o644)
	index := filepath.Join(dir, "index.json")
	r := packd(t, "index", "--index", index, "--pack-id", "hello", "--pack-version", "1.0.0",
		"--published-at", "2026-11-30T00:00:00.000Z", filepath.Join(dir, "hello.wasm"))
	if r.code != 0 {
		t.Fatalf("packd index: %d %s", r.code, r.stderr)
	}
	got, _ := os.ReadFile(index)
	want, _ := os.ReadFile(filepath.Join(helloDir, "index.json"))
	if string(got) != string(want) {
		t.Fatalf("packd index wrote\n%s\nwant (wasm-examples/hello/index.json)\n%s", got, want)
	}
	if r := packd(t, "index", "--index", index); r.code != 0 {
		t.Fatalf("again: %d %s", r.code, r.stderr)
	}
	if again, _ := os.ReadFile(index); string(again) != string(got) {
		t.Fatalf("a second run changed the index:\n%s", again)
	}

	// what the modules do not say is kept
	edited := strings.Replace(string(got), `"modulePath": "hello.wasm",`, `"limits": {"fuel": 900000000, "memMB": 64}, "modulePath": "hello.wasm",`, 1)
	edited = strings.Replace(edited, `"agents": [],`, `"env": {"optional": ["GREETING"]}, "agents": [],`, 1)
	_ = os.WriteFile(index, []byte(edited), 0o644)
	if r := packd(t, "index", "--index", index); r.code != 0 {
		t.Fatalf("over an edited index: %d %s", r.code, r.stderr)
	}
	kept, _ := os.ReadFile(index)
	for _, w := range []string{"\"limits\": {\n        \"fuel\": 900000000,\n        \"memMB\": 64\n      },", "\"env\": {\n    \"optional\": [\n      \"GREETING\"\n    ]\n  },"} {
		if !strings.Contains(string(kept), w) {
			t.Fatalf("not kept (or not canonical): %q in\n%s", w, kept)
		}
	}
	if r := packd(t, "check", "--index", index); r.code != 0 {
		t.Fatalf("packd check: %s %s", r.stdout, r.stderr)
	}
	if r := packd(t, "invoke", "--index", index, "--tool", "hello.greet", "--input", `{"name":"Ada"}`); r.code != 0 || strings.TrimSpace(r.stdout) != `{"v":2,"kind":"result","output":{"greeting":"Hello, Ada!"}}` {
		t.Fatalf("packd invoke: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestIndexSaysWhatIsMissing: a new index without a pack id, or a module
// outside the module root, is refused with what to do.
func TestIndexSaysWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	r := packd(t, "index", "--index", filepath.Join(dir, "index.json"), filepath.Join(dir, "x.wasm"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "a new index needs --pack-id") {
		t.Fatalf("no pack id: %d %s", r.code, r.stderr)
	}
	r = packd(t, "index", "--index", filepath.Join(dir, "index.json"), "--pack-id", "p", filepath.Join(helloDir, "hello.wasm"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "is not inside the module root") {
		t.Fatalf("outside the root: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
		t.Fatal("an index was written")
	}
}

// TestFixtureIndexesAreWhatTheirModulesSay: the Go and C conformance
// fixtures declare every tool's version, description and schemas, every
// guardrail's id, action, severity and config schema, and the pack's env
// in the module, so packd index gives their committed index byte for
// byte: over the committed index, and from one that keeps only the pack's
// own fields (no tools, guardrails or env).
func TestFixtureIndexesAreWhatTheirModulesSay(t *testing.T) {
	for _, dir := range []string{"conformance", "c-conformance"} {
		t.Run(dir, func(t *testing.T) {
			src := filepath.Join("..", "..", "wasm-examples", dir)
			want, err := os.ReadFile(filepath.Join(src, "index.json"))
			if err != nil {
				t.Fatal(err)
			}
			r := packd(t, "index", "--index", filepath.Join(src, "index.json"), "-o", "-")
			if r.code != 0 || r.stdout != string(want) {
				t.Fatalf("over the committed index: %d %s\n%s\nwant\n%s", r.code, r.stderr, r.stdout, want)
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal(want, &top); err != nil {
				t.Fatal(err)
			}
			delete(top, "tools")
			delete(top, "guardrails")
			delete(top, "env")
			bare, _ := json.Marshal(top)
			index := filepath.Join(t.TempDir(), "index.json")
			_ = os.WriteFile(index, bare, 0o644)
			r = packd(t, "index", "--index", index, "--module-root", src, "-o", "-", filepath.Join(src, "conformance.wasm"))
			if r.code != 0 || r.stdout != string(want) {
				t.Fatalf("from the module alone: %d %s\n%s\nwant\n%s", r.code, r.stderr, r.stdout, want)
			}
		})
	}
}

// TestIndexKeepsWhatAModuleWithoutVersionsDoesNotSay: a module that names
// only its ids (testdata/kindgi/ledger.wat, as a module of another
// language may) leaves its index entries whole: version, description,
// schemas, effects; the guardrail's action, severity and scope too.
func TestIndexKeepsWhatAModuleWithoutVersionsDoesNotSay(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "kindgi", "index.json")
	want, _ := os.ReadFile(path)
	r := packd(t, "index", "--index", path, "-o", "-")
	if r.code != 0 || r.stdout != string(want) {
		t.Fatalf("%d %s\n%s\nwant\n%s", r.code, r.stderr, r.stdout, want)
	}
	if r.stderr != "" {
		t.Errorf("notes for a module whose index says everything: %s", r.stderr)
	}
}

// TestIndexWritesWhatAModuleSays: every field a module's description may
// say (testdata/specs/specs.wat, written by hand as any language may) lands
// in the index packd index writes from a bare one: a tool's limits,
// network and kindgi's effects, mutating, needs, needsSpec, sandbox and
// spec; a guardrail's id, action, severity, limits, name, scope, config
// and sandbox; the pack's env
// (a name both required and optional is required). A description that
// would make an index that does not load (a negative fuel limit, the
// service token as an env name) writes nothing and names each problem.
func TestIndexWritesWhatAModuleSays(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"specs.wasm", "badspecs.wasm"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "specs", f))
		if err != nil {
			t.Fatalf("%v (run make fixtures)", err)
		}
		_ = os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	index := filepath.Join(dir, "index.json")
	r := packd(t, "index", "--index", index, "--pack-id", "specs", "--pack-version", "1.0.0",
		"--published-at", "2026-12-01T00:00:00.000Z", "-o", "-", filepath.Join(dir, "specs.wasm"))
	var got struct {
		Env        map[string][]string `json:"env"`
		Tools      []map[string]any    `json:"tools"`
		Guardrails []map[string]any    `json:"guardrails"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || len(got.Tools) != 1 || len(got.Guardrails) != 1 {
		t.Fatalf("packd index: %d %s\n%s", r.code, r.stderr, r.stdout)
	}
	text := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, c := range []struct{ got, want string }{
		{text(got.Env), `{"optional":["SPECS_DEBUG"],"required":["SPECS_URL"]}`},
		{text(got.Tools[0]), `{"description":"Fetches a thing.","effects":[{"kind":"reads","resource":"db:things"}],"id":"specs.fetch","input":{"type":"object"},"limits":{"fuel":5000000,"memMB":16},` +
			`"modulePath":"specs.wasm","mutating":false,"needs":[{"name":"tenant"}],"needsSpec":{"env":{"REGION":{"default":"eu","type":"string"}}},"network":{"hosts":["api.example.com"],"kind":"allowlist"},"output":{"type":"object"},` +
			`"sandbox":"strict","spec":{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/things/{id}"},"version":"2.0.0"}`},
		{text(got.Guardrails[0]), `{"action":{"on-violation":"log-only"},"checkId":"specs.checks.ok","checkModulePath":"specs.wasm","config":{"strict":true},"configSchema":{"type":"object"},` +
			`"id":"specs.ok","kind":"zero-llm","limits":{"fuel":1000000},"name":"It is ok","sandbox":"strict","scope":{"when":"always"},"severity":"warning"}`},
	} {
		if c.got != c.want {
			t.Errorf("got  %s\nwant %s", c.got, c.want)
		}
	}
	if r := packd(t, "check", "--index", writeString(t, filepath.Join(dir, "good.json"), r.stdout)); r.code != 0 {
		t.Fatalf("packd check of what packd index wrote: %s %s", r.stdout, r.stderr)
	}

	r = packd(t, "index", "--index", index, "--pack-id", "specs", filepath.Join(dir, "badspecs.wasm"))
	if r.code != exitError || !strings.Contains(r.stderr, "limits.fuel must be a positive integer") ||
		!strings.Contains(r.stderr, `"KINDGI_PACK_SERVICE_TOKEN" is not an allowed`) || !strings.Contains(r.stderr, "nothing written") {
		t.Fatalf("a description that makes a bad index: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(index); err == nil {
		t.Fatal("an index was written")
	}
}

func writeString(t *testing.T, path, s string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestIndexDigestsBindTheModules: packd index --digests names each
// module's SHA-256, and an index that names them goes on naming them; a
// module swapped for other bytes then fails packd check and the boot,
// naming it, and a reload onto it fails while the pack served goes on.
func TestIndexDigestsBindTheModules(t *testing.T) {
	dir := t.TempDir()
	wasm, err := os.ReadFile(filepath.Join(helloDir, "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	module, index := filepath.Join(dir, "hello.wasm"), filepath.Join(dir, "index.json")
	if err := os.WriteFile(module, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := packd(t, "index", "--index", index, "--pack-id", "hello", "--digests", module); r.code != 0 {
		t.Fatalf("packd index --digests: %d %s", r.code, r.stderr)
	}
	sum := sha256.Sum256(wasm)
	want := map[string]string{"hello.wasm": "sha256:" + hex.EncodeToString(sum[:])}
	digests := func() map[string]string {
		t.Helper()
		var idx struct{ ModuleDigests map[string]string }
		b, _ := os.ReadFile(index)
		if err := json.Unmarshal(b, &idx); err != nil {
			t.Fatal(err)
		}
		return idx.ModuleDigests
	}
	if got := digests(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the index's digests: %v, want %v", got, want)
	}
	if r := packd(t, "index", "--index", index); r.code != 0 {
		t.Fatalf("packd index again: %d %s", r.code, r.stderr)
	}
	if got := digests(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("written again without --digests, the index's digests: %v, want %v", got, want)
	}
	if r := packd(t, "check", "--index", index); r.code != 0 {
		t.Fatalf("packd check: %d %s", r.code, r.stderr)
	}
	s := start(t, index, nil)
	greet := func() string {
		t.Helper()
		r := s.invoke(t, invokeBody("hello.greet", "", `{"name":"Ada"}`, conformanceCtx))
		if r.status != 200 || !strings.Contains(r.body, `"kind":"result"`) {
			t.Fatalf("hello.greet: %d %s", r.status, r.body)
		}
		return r.body
	}
	greet()

	// Other bytes under the same name: one byte of a custom section.
	other := append(append([]byte(nil), wasm...), 0, 3, 1, 'x', 0) // a custom section "x" appended
	if err := os.WriteFile(module, other, 0o644); err != nil {
		t.Fatal(err)
	}
	swapped := "hello.wasm is not the module the index names: its SHA-256 is sha256:"
	if r := packd(t, "check", "--index", index); r.code == 0 || !strings.Contains(r.stdout+r.stderr, swapped) {
		t.Fatalf("packd check of a swapped module: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if rec := s.hup(t, "reloaded", "reload-failed"); rec["kind"] != "reload-failed" || !strings.Contains(fmt.Sprint(rec["problems"]), swapped) {
		t.Fatalf("a reload onto a swapped module: %v", rec)
	}
	greet() // the pack served goes on
	b := launch(t, index, nil)
	if line := b.stderr.waitFor(t, 60*time.Second, kindIs("boot-failed")); !strings.Contains(line, swapped) {
		t.Fatalf("boot onto a swapped module: %s", line)
	}
}
