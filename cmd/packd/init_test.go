package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitScaffoldsAPackThatAnswers: packd init writes a Go pack that
// builds, whose index packd index wrote, that passes packd check, answers
// packd invoke and its own go test, with no edits; packd index run again
// leaves its index as it was.
func TestInitScaffoldsAPackThatAnswers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("go is not on PATH: the test needs it to build the pack")
	}
	dir := filepath.Join(t.TempDir(), "Acme Notes")
	r := packdProc(t, "init", dir)
	if r.code != 0 {
		t.Fatalf("packd init: %d %s", r.code, r.stderr)
	}
	for _, f := range []string{"go.mod", "main.go", "main_test.go", "Makefile", "index.json", "acme-notes.wasm", "sdk/go.mod", "sdk/guest.go", "sdk/wire/wire.go"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("packd init did not write %s", f)
		}
	}
	index := filepath.Join(dir, "index.json")
	before, _ := os.ReadFile(index)
	if !strings.Contains(string(before), `"packId": "acme-notes"`) || !strings.Contains(string(before), `"id": "acme-notes.greet"`) {
		t.Fatalf("index:\n%s", before)
	}
	if r := packdProc(t, "check", "--index", index); r.code != 0 {
		t.Fatalf("packd check: %s %s", r.stdout, r.stderr)
	}
	r = packdProc(t, "invoke", "--index", index, "--tool", "acme-notes.greet", "--input", `{"name":"Ada"}`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"v":2,"kind":"result","output":{"greeting":"Hello, Ada!"}}` {
		t.Fatalf("packd invoke: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := packdProc(t, "invoke", "--index", index, "--tool", "acme-notes.greet", "--input", `{"name":5}`); r.code != 1 || !strings.Contains(r.stdout, "input-validation-failed") {
		t.Fatalf("input of the wrong type: %d %s", r.code, r.stdout)
	}
	freshClone(t, dir)
	test := exec.Command("make", "test", "PACKD="+packdPath)
	test.Dir = dir
	test.Env = withoutMake(os.Environ())
	if out, err := test.CombinedOutput(); err != nil || !strings.Contains(string(out), "1 of 1 records replayed identically") {
		t.Fatalf("make test in the new pack (its go test, and its recorded example call replayed): %v\n%s", err, out)
	}
	if r := packdProc(t, "index", "--index", index); r.code != 0 {
		t.Fatalf("packd index: %s", r.stderr)
	}
	if after, _ := os.ReadFile(index); string(after) != string(before) {
		t.Fatalf("packd index changed the index init wrote:\n%s", after)
	}
}

// TestInitCPack: packd init --lang c writes a C pack (kindgi.h beside it)
// that clang builds, whose index packd index wrote, that passes packd
// check, answers packd invoke and its own native test (make test).
func TestInitCPack(t *testing.T) {
	for _, tool := range []string{"clang", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: the test needs it (scripts/deps installs it)", tool)
		}
	}
	dir := filepath.Join(t.TempDir(), "acme.hello-c")
	if r := packd(t, "init", "--lang", "c", dir); r.code != 0 {
		t.Fatalf("packd init: %d %s", r.code, r.stderr)
	}
	for _, f := range []string{"hello-c.c", "hello-c_test.c", "kindgi.h", "Makefile", "index.json", "hello-c.wasm"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("packd init did not write %s", f)
		}
	}
	index := filepath.Join(dir, "index.json")
	if r := packd(t, "check", "--index", index); r.code != 0 {
		t.Fatalf("packd check: %s %s", r.stdout, r.stderr)
	}
	r := packd(t, "invoke", "--index", index, "--tool", "acme.hello-c.greet", "--input", `{"name":"Ad\u00e1"}`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"v":2,"kind":"result","output":{"greeting":"Hello, Adá!"}}` {
		t.Fatalf("packd invoke: %d %s %s", r.code, r.stdout, r.stderr)
	}
	freshClone(t, dir)
	test := exec.Command("make", "test", "PACKD="+packdPath)
	test.Dir = dir
	test.Env = withoutMake(os.Environ())
	if out, err := test.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok") || !strings.Contains(string(out), "1 of 1 records replayed identically") {
		t.Fatalf("make test in the new pack: %v\n%s", err, out)
	}
	// The greeting changed and rebuilt: the recorded example call, a test,
	// now fails, saying where; make record records it anew.
	src := filepath.Join(dir, "hello-c.c")
	code, _ := os.ReadFile(src)
	if err := os.WriteFile(src, bytes.ReplaceAll(code, []byte(`"Hello, "`), []byte(`"Howdy, "`)), 0o644); err != nil {
		t.Fatal(err)
	}
	mk := func(args ...string) (string, error) {
		c := exec.Command("make", append(args, "PACKD="+packdPath)...)
		c.Dir, c.Env = dir, withoutMake(os.Environ())
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := mk("all"); err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	replay := func() runResult { return packdProc(t, "replay", "--index", index, filepath.Join(dir, "records")) }
	if r := replay(); r.code != 1 || !strings.Contains(r.stdout, "DIFFERENT") || !strings.Contains(r.stdout, `output differs at byte 14 of 26 (recorded 26): "{\"greeting\":\"Howdy, Ada!\"}", recorded "{\"greeting\":\"Hello, Ada!\"}"`) {
		t.Fatalf("packd replay after the change: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out, err := mk("record"); err != nil {
		t.Fatalf("make record: %v\n%s", err, out)
	}
	if r := replay(); r.code != 0 || !strings.Contains(r.stdout, "1 of 1 records replayed identically") {
		t.Fatalf("packd replay after make record: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestInitTSPack: packd init --lang ts writes a TypeScript pack (the SDK
// beside it in packd-sdk/) whose npm packages it installs, which it
// bundles with esbuild and builds with build-js, whose index packd index
// wrote from the module (zod's schemas as JSON Schema), that passes packd
// check, answers packd invoke for its tool and its check, and passes its
// own native tests (make test, with node).
func TestInitTSPack(t *testing.T) {
	for _, tool := range []string{"npm", "node", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: the test needs it (scripts/deps installs it)", tool)
		}
	}
	dir := filepath.Join(t.TempDir(), "acme.hello-ts")
	if r := packd(t, "init", "--lang", "ts", dir); r.code != 0 {
		t.Fatalf("packd init: %d %s", r.code, r.stderr)
	}
	for _, f := range []string{"src/pack.ts", "test/pack.test.ts", "packd-sdk/index.js", "packd-sdk/index.d.ts", "package.json", "tsconfig.json", "Makefile", "index.json", "hello-ts.wasm"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("packd init did not write %s", f)
		}
	}
	index := filepath.Join(dir, "index.json")
	if r := packd(t, "check", "--index", index); r.code != 0 {
		t.Fatalf("packd check: %s %s", r.stdout, r.stderr)
	}
	raw, _ := os.ReadFile(index)
	if !strings.Contains(string(raw), `"description": "Who to greet."`) || !strings.Contains(string(raw), `"minLength": 1`) {
		t.Errorf("the index lacks the zod schema's JSON Schema: %s", raw)
	}
	r := packd(t, "invoke", "--index", index, "--tool", "acme.hello-ts.greet", "--input", `{"name":"Ad\u00e1"}`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"v":2,"kind":"result","output":{"greeting":"Hello, Adá!"}}` {
		t.Fatalf("packd invoke: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = packd(t, "invoke", "--index", index, "--check", "acme.hello-ts.checks.not-empty", "--config", `{}`, "--trace", `{"output":" "}`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"v":2,"kind":"check-result","result":{"passed":false,"reason":"too short"}}` {
		t.Fatalf("packd invoke --check: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// A build type-checks the pack as packd runs it (process.env is there)
	// and its tests as node does: a check that answers passed: 0 fails
	// the build, at its file and line, not at run time.
	src := filepath.Join(dir, "src", "pack.ts")
	good, _ := os.ReadFile(src)
	_ = os.WriteFile(src, append(good, []byte("export const apiURL: string = process.env.API_URL ?? \"none\";\n")...), 0o644)
	runMake := func(target string) (string, error) {
		c := exec.Command("make", target, "PACKD="+packdPath)
		c.Dir, c.Env = dir, withoutMake(os.Environ())
		out, err := c.CombinedOutput()
		return string(out), err
	}
	// A kindgi pack's imports work as they are: packd's SDK is installed
	// as @kindgi/sdk too.
	kindgi := filepath.Join(dir, "src", "kindgi.ts")
	_ = os.WriteFile(kindgi, []byte(`import { defineTool } from "@kindgi/sdk/define";
import type { ToolId } from "@kindgi/sdk/types";
const defined = defineTool({
  id: "acme.hello-ts.kindgi" as ToolId,
  version: "0.1.0",
  input: { type: "object" },
  output: { type: "object" },
  effects: [{ kind: "reads" }],
  mutating: false,
  handler: async () => ({}),
});
if (defined.kind === "err") throw new Error(defined.error.message);
export default defined.value;
`), 0o644)
	if out, err := runMake("typecheck"); err != nil {
		t.Fatalf("make typecheck of the scaffold (process.env, @kindgi/sdk imports): %v\n%s", err, out)
	}
	_ = os.Remove(kindgi)
	_ = os.WriteFile(src, []byte(strings.Replace(string(good), "{ passed: true }", "{ passed: 0 }", 1)), 0o644)
	if out, err := runMake("build"); err == nil || !strings.Contains(out, "src/pack.ts(") || !strings.Contains(out, "error TS2322") {
		t.Fatalf("make build of a check answering passed: 0: %v\n%s", err, out)
	}
	_ = os.WriteFile(src, good, 0o644)
	freshClone(t, dir)
	test := exec.Command("make", "test", "PACKD="+packdPath)
	test.Dir = dir
	test.Env = withoutMake(os.Environ())
	if out, err := test.CombinedOutput(); err != nil || !strings.Contains(string(out), "# pass 2") || !strings.Contains(string(out), "1 of 1 records replayed identically") {
		t.Fatalf("make test in the new pack: %v\n%s", err, out)
	}
}

// freshClone leaves a new pack as a clone of its repository finds it:
// without what its .gitignore keeps out of it (the module, the npm
// packages, the bundle), so that its make test must build them itself.
func freshClone(t *testing.T, dir string) {
	t.Helper()
	ignore, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pattern := range strings.Fields(string(ignore)) {
		matches, _ := filepath.Glob(filepath.Join(dir, strings.TrimSuffix(pattern, "/")))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// withoutMake is an environment without a make's own variables (its
// jobserver would make a nested make wait for tokens forever).
func withoutMake(environ []string) []string {
	var env []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			env = append(env, kv)
		}
	}
	return env
}

// TestInitRefuses: an existing directory with files in it, a language it
// does not write, or no directory.
func TestInitRefuses(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"init", dir}, "exists and is not empty"},
		{[]string{"init", "--lang", "cobol", filepath.Join(dir, "x")}, `--lang "cobol"`},
		{[]string{"init"}, "name one directory"},
		{[]string{"init", "--pack-id", "Bad Id", filepath.Join(dir, "y")}, `pack id "Bad Id"`},
	} {
		if r := packd(t, c.args...); r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: %d %s", c.args, r.code, r.stderr)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "mine" {
		t.Fatal("packd init touched an existing file")
	}
}
