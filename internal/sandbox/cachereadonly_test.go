//go:build linux

package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/immutable"
	"github.com/kindgi/packd/internal/sandbox"
)

// A cache made before (as packd check makes one) on a file system packd
// cannot write boots warm from it, writing nothing: no pass, no
// description run, the code mapped from its file; and a module it lacks
// still compiles (wazero fails to write it to the cache, and keeps it).
// Without CacheReadOnly the module the cache lacks failed to compile.
func TestAReadOnlyCacheBootsWarm(t *testing.T) {
	dir := t.TempDir()
	warm, closeWarm := warmIn(t, dir)
	if _, err := warm.Describe(context.Background()); err != nil {
		t.Fatal(err)
	}
	closeWarm()
	immutable.Freeze(t, dir)
	passes, described := sandbox.PassRuns(), sandbox.DescribeRuns()
	var told string
	sb := newSandbox(t, sandbox.Config{CacheDir: dir, CacheReadOnly: true, PoolSize: 2, CacheRepaired: func(why string, _ int) { told = why }})
	m := compile(t, sb, cacheModule)
	if told != "" {
		t.Fatalf("the read-only cache was not used: %s", told)
	}
	if _, err := m.Describe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Warm(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if sandbox.PassRuns() != passes || sandbox.DescribeRuns() != described || !mappedCode(t, sandbox.CodePath(m)) {
		t.Fatalf("from the read-only cache: %d passes, %d descriptions run, code mapped %v",
			sandbox.PassRuns()-passes, sandbox.DescribeRuns()-described, mappedCode(t, sandbox.CodePath(m)))
	}
	echoConformance(t, m)
	lacked := compile(t, sb, hostile("counter"))
	if _, err, _ := call(t, lacked, 10*time.Second); err != nil {
		t.Fatalf("a module the read-only cache lacks: %v", err)
	}
}

// A read-only cache with an entry that does not match its seal (the
// twins' offsets swapped) cannot have it removed: its compiled code is
// not used at all, CacheRepaired says so, and the module compiles anew
// and runs its own code.
func TestATamperedReadOnlyCacheIsNotUsed(t *testing.T) {
	dir := twinsCache(t)
	replaceSwapped(t, dir)
	immutable.Freeze(t, dir)
	var why string
	got := twinsAnswer(t, sandbox.Config{CacheDir: dir, CacheReadOnly: true, CacheRepaired: func(w string, _ int) { why = w }})
	if got != `"first"` || !strings.Contains(why, "did not match their seal") {
		t.Fatalf("from a tampered read-only cache: %s, told %q", got, why)
	}
}

// A FIFO put in place of a cache file (a pass entry, its description, its
// code, a wazero entry's seal) blocked the boot for ever when it was read
// (os.ReadFile waits for a writer that never comes): every one is now
// opened only as a regular file, refused otherwise, and the module loads,
// is described, warms and answers.
func TestFIFOsInTheCacheDoNotHangABoot(t *testing.T) {
	dir := t.TempDir()
	first, closeFirst := warmIn(t, dir)
	if _, err := first.Describe(context.Background()); err != nil {
		t.Fatal(err)
	}
	closeFirst()
	pass, _ := filepath.Glob(filepath.Join(dir, "packd-pass", "*", "*"))
	seals, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*.seal"))
	if len(pass) != 3 || len(seals) != 1 {
		t.Fatalf("the warm cache holds %v and %v: want a pass entry, its description and code, one seal", pass, seals)
	}
	for _, p := range append(pass, seals...) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sandbox.ForgetVerified()
	done := make(chan error, 1)
	var m *sandbox.Module
	go func() {
		sb, err := sandbox.New(context.Background(), sandbox.Config{CacheDir: dir, PoolSize: 2})
		if err != nil {
			done <- err
			return
		}
		t.Cleanup(func() { _ = sb.Close(context.Background()) })
		wasm, err := os.ReadFile(cacheModule)
		if err == nil {
			m, err = sb.Compile(context.Background(), wasm)
		}
		if err == nil {
			_, err = m.Describe(context.Background())
		}
		if err == nil {
			err = m.Warm(context.Background(), nil)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the boot hangs on a FIFO in the cache")
	}
	echoConformance(t, m)
}
