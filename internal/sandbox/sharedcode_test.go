//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kindgi/packd/internal/sandbox"
)

var conformanceGo = filepath.Join("..", "..", "wasm-examples", "conformance", "conformance.wasm")

// cacheModule is the module the compilation cache's tests compile: what
// they check (entries, seals, the code file and its mapping) is the
// cache's, alike for every language, and the C conformance module (220 KB)
// compiles in a sixteenth of the Go one's time under -race.
var cacheModule = filepath.Join("..", "..", "wasm-examples", "c-conformance", "conformance.wasm")

// mappedCode reports whether path is mapped executable in this process.
func mappedCode(t *testing.T, path string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		if f := strings.Fields(line); len(f) == 6 && f[1] == "r-xp" && f[5] == path {
			return true
		}
	}
	return false
}

// warmIn compiles cacheModule in a sandbox over dir and
// warms it; the sandbox is closed with the test, or by close.
func warmIn(t *testing.T, dir string) (m *sandbox.Module, close func()) {
	t.Helper()
	sb := newSandbox(t, sandbox.Config{CacheDir: dir, PoolSize: 2})
	m = compile(t, sb, cacheModule)
	if err := m.Warm(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return m, func() { _ = sb.Close(context.Background()) }
}

// Once warm, a module's native code is mapped from its file in the cache
// (15 MiB a Go module wazero keeps resident whole otherwise; a call runs
// under 2 MiB of it), the module answers as before, and a later sandbox
// over the same cache (a warm boot) maps the same file, not a copy written
// anew.
func TestWarmMapsTheCodeFromItsFile(t *testing.T) {
	dir := t.TempDir()
	sb := newSandbox(t, sandbox.Config{CacheDir: dir, PoolSize: 2})
	m := compile(t, sb, cacheModule)
	path := sandbox.CodePath(m)
	if path == "" || mappedCode(t, path) {
		t.Fatalf("before Warm: code file %q, mapped %v", path, path != "" && mappedCode(t, path))
	}
	if err := m.Warm(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !mappedCode(t, path) {
		t.Fatalf("after Warm the code is not mapped from %s", path)
	}
	for range 3 {
		echoConformance(t, m)
	}
	first, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := warmIn(t, dir)
	if now, err := os.Stat(path); err != nil || !os.SameFile(first, now) || !now.ModTime().Equal(first.ModTime()) {
		t.Fatalf("a warm boot wrote the code file anew: %v", err)
	}
	echoConformance(t, again)
}

// A code file changed on disk (here: every byte a breakpoint, as code an
// attacker put there would be) is not what gets mapped: it is compared
// whole with what wazero compiled, written anew, and the module runs its
// own code (mapping the tampered file would stop the process at the first
// call).
func TestATamperedCodeFileIsNotRun(t *testing.T) {
	dir := t.TempDir()
	m, closeFirst := warmIn(t, dir)
	path := sandbox.CodePath(m)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	closeFirst() // nothing maps the file while it is changed in place
	if err := os.WriteFile(path, bytes.Repeat([]byte{0xcc}, len(good)), 0o600); err != nil {
		t.Fatal(err)
	}
	m, _ = warmIn(t, dir)
	if !mappedCode(t, path) {
		t.Fatal("the code is not mapped from its file")
	}
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, good) {
		t.Fatalf("the tampered code file was not written anew: %v", err)
	}
	echoConformance(t, m)
}

// A cache on tmpfs keeps the code as wazero mapped it: the file's pages
// would be in memory whether they run or not, so mapping it would only
// change what RSS says.
func TestCodeInACacheOnTmpfsIsNotMapped(t *testing.T) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || st.Type != 0x01021994 {
		t.Fatalf("/dev/shm is not tmpfs here (%v): this test needs a tmpfs to put a cache on", err)
	}
	dir, err := os.MkdirTemp("/dev/shm", "packd-test-cache")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	m, _ := warmIn(t, dir)
	if path := sandbox.CodePath(m); path == "" || mappedCode(t, path) {
		t.Fatalf("code file %q: mapped from tmpfs", path)
	}
	echoConformance(t, m)
}

// wazero's decoded function bodies (2.9 MiB a Go module, kept for the
// module's life) are let go of once it is compiled, and the module runs.
func TestCompiledModulesKeepNoBodies(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 2}), conformanceGo)
	if kept := sandbox.KeptBodies(m); kept != 0 {
		t.Fatalf("%d bodies kept after compiling", kept)
	}
	echoConformance(t, m)
}
