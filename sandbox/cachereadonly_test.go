//go:build linux

package sandbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/immutable"
	"github.com/kindgi/packd/sandbox"
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
	m := compile(t, sb, conformanceGo)
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
	echoGo(t, m)
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
	dir := t.TempDir()
	sb := newSandbox(t, sandbox.Config{CacheDir: dir})
	compile(t, sb, hostile("twins"))
	_ = sb.Close(context.Background())
	replaceSwapped(t, dir)
	immutable.Freeze(t, dir)
	var why string
	sb = newSandbox(t, sandbox.Config{CacheDir: dir, CacheReadOnly: true, CacheRepaired: func(w string, _ int) { why = w }})
	m := compile(t, sb, hostile("twins"))
	rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{}`)})
	if err != nil || string(rep.Body) != `"first"` || !strings.Contains(why, "did not match their seal") {
		t.Fatalf("from a tampered read-only cache: %s %v, told %q", rep.Body, err, why)
	}
}
