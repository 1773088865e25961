//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/immutable"
)

// TestServiceBootsWarmFromAReadOnlyCache: a cache made by packd check (as
// make image makes the image's) on a file system packd cannot write (an
// image's read-only root) is used as it is: a cache-read-only record, the
// pack serves from what the cache holds (no entry refused), nothing in the
// cache changes. On
// main, a named cache directory that could not be written failed the
// boot, and the default one was dropped for a cache in memory.
func TestServiceBootsWarmFromAReadOnlyCache(t *testing.T) {
	dir := t.TempDir()
	if r := packd(t, "check", "--index", conformance, "--cache-dir", dir); r.code != 0 {
		t.Fatalf("warming the cache: %d %s", r.code, r.stderr)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "packd-pass", "*", "*"))
	if len(entries) < 3 {
		t.Fatalf("packd check left %v in the pass's cache: want the pass, the description and the code", entries)
	}
	immutable.Freeze(t, dir)
	s := start(t, conformance, nil, "--cache-dir", dir)
	note := record(t, s.stderr.waitFor(t, 60*time.Second, kindIs("cache-read-only")))
	if note["level"] != "info" || !strings.Contains(note["message"].(string), "used as it is, read-only") {
		t.Fatalf("record %v", note)
	}
	expect(t, s.invoke(t, invokeBody("conformance.echo", "", `{"message":"hi"}`, conformanceCtx)), 200, `{"v":2,"kind":"result","output":{"message":"hi"}}`)
	for _, line := range s.stderr.snapshot() {
		if kindIs("cache-repaired")(line) {
			t.Fatalf("the read-only cache was not used: %s", line)
		}
	}
	if after, _ := filepath.Glob(filepath.Join(dir, "packd-pass", "*", "*")); len(after) != len(entries) {
		t.Fatalf("the read-only cache changed: %v, then %v", entries, after)
	}
	if _, err := os.Stat(filepath.Join(dir, "packd-cache.key")); err != nil {
		t.Fatal(err)
	}
}
