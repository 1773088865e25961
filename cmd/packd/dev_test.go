package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDevRebuildsAGoPack: packd dev serves a Go pack packd init wrote;
// an edit of its source is rebuilt, re-indexed and served without a
// restart; an edit that does not build is printed with its file and line,
// and the last good build goes on serving.
func TestDevRebuildsAGoPack(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("go is not on PATH: the test needs it to build the pack")
	}
	dir := filepath.Join(t.TempDir(), "devpack")
	if r := packdProc(t, "init", dir); r.code != 0 {
		t.Fatalf("packd init: %d %s", r.code, r.stderr)
	}
	s := startDev(t, dir)
	greet := func() string {
		t.Helper()
		r := s.invoke(t, invokeBody("devpack.greet", "", `{"name":"Ada"}`, `{"tenantId":"t","runId":"r"}`))
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return r.body
	}
	if got := greet(); got != `{"v":2,"kind":"result","output":{"greeting":"Hello, Ada!"}}` {
		t.Fatalf("before the edit: %s", got)
	}
	edit := func(name, from, to string, match func(string) bool) string {
		t.Helper()
		return s.edit(t, filepath.Join(dir, name), from, to, match)
	}

	edit("main.go", `"Hello, "`, `"Howdy, "`, kindIs("reloaded"))
	if got := greet(); got != `{"v":2,"kind":"result","output":{"greeting":"Howdy, Ada!"}}` {
		t.Fatalf("after the edit: %s", got)
	}
	// The same version, loaded again: said so, not "0.1.0 (was 0.1.0)".
	for _, l := range s.stderr.snapshot() {
		if kindIs("reloaded")(l) && !strings.Contains(l, "anew: its index and modules loaded again (index sha256:") {
			t.Errorf("the reload says %s", l)
		}
	}
	// A build that fails: the compiler's file and line, and the last good
	// pack serves on.
	all := edit("main.go", `"Howdy, "`, `"Howdy, " +`, has("packd dev: the build failed"))
	if !strings.Contains(all, "main.go:") {
		t.Fatalf("the build's error names no file and line:\n%s", all)
	}
	if got := greet(); !strings.Contains(got, "Howdy, Ada!") {
		t.Fatalf("after a build that failed: %s", got)
	}
	edit("main.go", `"Howdy, " +`, `"Hi, "`, kindIs("reloaded"))
	if got := greet(); !strings.Contains(got, "Hi, Ada!") {
		t.Fatalf("after the fix: %s", got)
	}
	n := s.count(kindIs("reloaded")) + s.count(kindIs("reload-failed"))
	if n != 2 {
		t.Fatalf("%d reload records, want 2 (a build that failed is not reloaded)", n)
	}
}

// startDev runs packd dev on dir and waits for its listening record.
func startDev(t *testing.T, dir string) *served {
	t.Helper()
	s := &served{token: randomToken(), exited: make(chan error, 1)}
	s.cmd = exec.Command(packdPath, "dev", "--cache-dir", cacheDir, "--metrics-addr", "off", dir)
	s.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "PORT=0", tokenEnv + "=" + s.token}
	s.begin(t)
	rec := record(t, s.stderr.waitFor(t, 120*time.Second, kindIs("listening")))
	s.base = fmt.Sprintf("http://127.0.0.1:%d", int(rec["port"].(float64)))
	// It says where it serves, and how to call.
	s.stderr.waitFor(t, 30*time.Second, has("packd dev: serving "+s.base+": POST /v1/invoke (kindgi-pack-token), and MCP at /mcp"))
	return s
}

// count is how many of the service's stderr lines match.
func (s *served) count(match func(string) bool) int {
	n := 0
	for _, l := range s.stderr.snapshot() {
		if match(l) {
			n++
		}
	}
	return n
}

func has(text string) func(string) bool {
	return func(l string) bool { return strings.Contains(l, text) }
}

// edit replaces from with to in the file at path, and waits for one more
// stderr line that matches; it answers the whole of stderr then.
func (s *served) edit(t *testing.T, path, from, to string, match func(string) bool) string {
	t.Helper()
	n := s.count(match)
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), from) {
		t.Fatalf("%s lacks %q (%v)", path, from, err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(120 * time.Second); s.count(match) <= n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the edit of %s, no new matching line; have:\n%s", path, strings.Join(s.stderr.snapshot(), "\n"))
		}
	}
	return strings.Join(s.stderr.snapshot(), "\n")
}

// TestDevReloadsAPackWithoutAMakefile: a pack of modules and an index,
// with nothing to build, is reloaded when its index changes; an index
// that does not load is printed with its file, line and column, and the
// last good pack goes on serving.
func TestDevReloadsAPackWithoutAMakefile(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(hostileIndex), "counter.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "counter.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "index.json")
	writeHostileIndex(t, idx, "dev-1", "counter=counter.wasm")
	s := startDev(t, dir)
	version := func() string {
		t.Helper()
		r := s.invoke(t, invokeBody("hostile.counter", "", `{}`, `{"tenantId":"t","runId":"r"}`))
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return r.header.Get("Kindgi-Artifact-Version")
	}
	if v := version(); v != "dev-1" {
		t.Fatalf("serving %q", v)
	}
	s.edit(t, idx, `"dev-1"`, `"dev-2"`, kindIs("reloaded"))
	if v := version(); v != "dev-2" {
		t.Fatalf("after the index changed, serving %q", v)
	}
	all := s.edit(t, idx, `{"v":1,`, `{"v":1,,`, kindIs("reload-failed"))
	if !strings.Contains(all, idx+":1:8: Cannot read the pack index: it is not valid JSON") {
		t.Fatalf("the load problem's place is not said:\n%s", all)
	}
	if v := version(); v != "dev-2" {
		t.Fatalf("after an index that does not load, serving %q", v)
	}
}

// TestDevStoppedDuringABuildStopsIt: packd dev stopped (SIGTERM) while
// make runs stops make and what make started, and exits 0 (before, the
// build went on after packd dev had gone).
func TestDevStoppedDuringABuildStopsIt(t *testing.T) {
	dir := t.TempDir()
	makefile := "all:\n\tsh -c 'echo $$$$ > child.pid; exec sleep 60'\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}
	writeHostileIndex(t, filepath.Join(dir, "index.json"), "dev-1", "counter=counter.wasm")
	s := &served{token: randomToken(), exited: make(chan error, 1)}
	s.cmd = exec.Command(packdPath, "dev", "--cache-dir", cacheDir, "--metrics-addr", "off", dir)
	s.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "PORT=0", tokenEnv + "=" + s.token}
	s.begin(t)
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the build never started:\n%s", strings.Join(s.stderr.snapshot(), "\n"))
		}
		b, _ := os.ReadFile(filepath.Join(dir, "child.pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("packd dev exited %d", code)
	}
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the build's sleep goes on after packd dev stopped")
		}
	}
}

// TestDevBuildsAKindgiPack: packd dev on a kindgi-shaped pack (no
// Makefile; tools/ and guardrails/) builds it with packd build-ts and
// packd index, serves it, and rebuilds and reloads it when a tool
// changes; a build that fails (a global packd lacks) is printed, and the
// last good pack goes on serving.
func TestDevBuildsAKindgiPack(t *testing.T) {
	dir := kindgiPack(t)
	s := startDev(t, dir)
	total := func() string {
		t.Helper()
		r := s.invoke(t, invokeBody("acme-desk.get-order", "", `{"orderId":"ord_1002"}`, `{"tenantId":"t","runId":"r"}`))
		var answer struct{ Output struct{ Total string } }
		if r.status != 200 || json.Unmarshal([]byte(r.body), &answer) != nil {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return answer.Output.Total
	}
	if got := total(); got != "9.90 EUR" {
		t.Fatalf("serving %q", got)
	}
	tool := filepath.Join(dir, "tools", "get-order", "index.ts")
	s.edit(t, tool, ".default('EUR')", ".default('USD')", kindIs("reloaded"))
	if got := total(); got != "9.90 USD" {
		t.Fatalf("after the edit, serving %q", got)
	}
	all := s.edit(t, tool, "const order = findOrder(orderId);", "const order = findOrder(orderId); setImmediate(() => {});", has("packd dev: the build failed"))
	if !strings.Contains(all, "tools/get-order/index.ts(21,") || !strings.Contains(all, "Cannot find name 'setImmediate'") {
		t.Fatalf("the type error's place is not said:\n%s", all)
	}
	if got := total(); got != "9.90 USD" {
		t.Fatalf("after a build that failed, serving %q", got)
	}
}
