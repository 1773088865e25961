package sandbox_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// cacheEntries are the entries of the compilation cache in dir (not their
// seals).
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	all, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	var entries []string
	for _, p := range all {
		if !strings.HasSuffix(p, ".seal") {
			entries = append(entries, p)
		}
	}
	if len(entries) == 0 {
		t.Fatal("no cache entry was written")
	}
	return entries
}

// reseal writes the seal an entry's bytes should have, as packd does: an
// entry corrupt in a way its seal cannot see.
func reseal(t *testing.T, dir, entry string) {
	t.Helper()
	key, err := os.ReadFile(filepath.Join(dir, "packd-cache.key"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(filepath.Base(entry)))
	h.Write([]byte{0})
	h.Write(b)
	if err := os.WriteFile(entry+".seal", h.Sum(nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestACorruptCacheEntryIsRepaired: an entry of the compilation cache cut
// short or overwritten (truncate -s 20, garbage) does not fail the module
// on every start: its seal no longer matches, so it is removed before
// wazero reads it, the module compiles anew and runs, and CacheRepaired
// says so. Sealed anew (as if the seal had been written over a bad
// entry), wazero's own error on it repairs the cache too. On main every
// compile answered "invalid module: compilationcache: ... EOF", a crash
// loop for a service.
func TestACorruptCacheEntryIsRepaired(t *testing.T) {
	for _, resealed := range []bool{false, true} {
		for _, corrupt := range []func(string) error{
			func(p string) error { return os.Truncate(p, 20) },
			func(p string) error { return os.WriteFile(p, []byte("garbage, not a cache entry"), 0o600) },
		} {
			dir := t.TempDir()
			sb := newSandbox(t, sandbox.Config{CacheDir: dir})
			compile(t, sb, hostile("counter"))
			_ = sb.Close(context.Background())
			entries := cacheEntries(t, dir)
			for _, e := range entries {
				if err := corrupt(e); err != nil {
					t.Fatal(err)
				}
				if resealed {
					reseal(t, dir, e)
				}
			}
			var why string
			removed := 0
			sb = newSandbox(t, sandbox.Config{CacheDir: dir, CacheRepaired: func(w string, n int) { why, removed = w, n }})
			m := compile(t, sb, hostile("counter"))
			want := "did not match their seal"
			if resealed {
				want = "compilationcache"
			}
			if !strings.Contains(why, want) || removed < len(entries) {
				t.Fatalf("resealed %v: repaired: %q, %d of %d entries removed", resealed, why, removed, len(entries))
			}
			if _, err, _ := call(t, m, 10*time.Second); err != nil {
				t.Fatalf("the module after the repair: %v", err)
			}
		}
	}
}

// TestACacheEntryIsVerifiedWholeBeforeItRuns: in twins, kindgi_call
// answers "first" and the export second "second"; with the cache entry's
// function offsets of the two swapped (outside wazero's checksum), the
// entry's seal fails, it is removed, and the call answers "first". On main
// the swapped entry was loaded and the call answered "second": code other
// than compiled ran.
func TestACacheEntryIsVerifiedWholeBeforeItRuns(t *testing.T) {
	dir := twinsCache(t)
	replaceSwapped(t, dir)
	runsTheTwinsOwnCode(t, dir)
}

// replaceSwapped replaces every entry of the twins' cache in dir with its
// offsets swapped, written beside and renamed over, as a replaced file
// would be (TestAnEntryWrittenInPlaceIsReadWholeAgain writes in place).
func replaceSwapped(t *testing.T, dir string) {
	t.Helper()
	for _, e := range cacheEntries(t, dir) {
		if err := os.WriteFile(e+".new", swappedOffsets(t, e), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(e+".new", e); err != nil {
			t.Fatal(err)
		}
	}
}

// swappedOffsets is the twins' cache entry at e with the function offsets
// of kindgi_call and second swapped.
func swappedOffsets(t *testing.T, e string) []byte {
	t.Helper()
	b, err := os.ReadFile(e)
	if err != nil {
		t.Fatal(err)
	}
	// WAZEVO, the version's length and bytes, the function count, then
	// 8 bytes of offset per function: kindgi_call and second come first.
	at := 6 + 1 + int(b[6]) + 4
	if n := binary.LittleEndian.Uint32(b[at-4:]); n < 2 {
		t.Fatalf("%d functions in the entry", n)
	}
	first, second := b[at:at+8], b[at+8:at+16]
	var tmp [8]byte
	copy(tmp[:], first)
	copy(first, second)
	copy(second, tmp[:])
	return b
}

// runsTheTwinsOwnCode compiles the twins over the cache in dir and fails
// unless a changed entry was removed and the call answers "first".
func runsTheTwinsOwnCode(t *testing.T, dir string) {
	t.Helper()
	removed := 0
	if got := twinsAnswer(t, sandbox.Config{CacheDir: dir, CacheRepaired: func(_ string, n int) { removed = n }}); got != `"first"` || removed == 0 {
		t.Fatalf("after swapping the offsets: %s, %d entries removed", got, removed)
	}
}

// twinsCache is a compilation cache that holds the twins.
func twinsCache(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sb := newSandbox(t, sandbox.Config{CacheDir: dir})
	compile(t, sb, hostile("twins"))
	_ = sb.Close(context.Background())
	return dir
}

// twinsAnswer is what the twins' call answers in a sandbox of cfg.
func twinsAnswer(t *testing.T, cfg sandbox.Config) string {
	t.Helper()
	m := compile(t, newSandbox(t, cfg), hostile("twins"))
	rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(`{}`)})
	if err != nil {
		t.Fatalf("the twins' call: %v", err)
	}
	return string(rep.Body)
}

// TestAStampedEntryIsNotReadAgain: a boot after the one that compiled
// finds the entries as they were sealed (their stamps) and reads none of
// them whole (every boot read and hashed each: 14 ms a Go module, ahead of
// every compilation); the module runs.
func TestAStampedEntryIsNotReadAgain(t *testing.T) {
	dir := t.TempDir()
	sb := newSandbox(t, sandbox.Config{CacheDir: dir})
	compile(t, sb, hostile("counter"))
	_ = sb.Close(context.Background())
	sandbox.ForgetVerified() // as a new process would
	before := sandbox.EntriesReadWhole()
	m := compile(t, newSandbox(t, sandbox.Config{CacheDir: dir}), hostile("counter"))
	if n := sandbox.EntriesReadWhole() - before; n != 0 {
		t.Fatalf("%d entries read whole on a boot that found them as sealed", n)
	}
	if _, err, _ := call(t, m, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestAnEntryWrittenInPlaceIsReadWholeAgain: the twins' entry with its
// offsets swapped, written in place at its size, its modification time
// put back: only its change time says it changed, and that is enough for
// its stamp to fail, the entry to be read whole and removed, and the call
// to answer "first".
func TestAnEntryWrittenInPlaceIsReadWholeAgain(t *testing.T) {
	dir := twinsCache(t)
	time.Sleep(20 * time.Millisecond) // past the tick of the file clock the entry was written in
	for _, e := range cacheEntries(t, dir) {
		info, err := os.Stat(e)
		if err != nil {
			t.Fatal(err)
		}
		b := swappedOffsets(t, e)
		f, err := os.OpenFile(e, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(b, 0); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		if err := os.Chtimes(e, info.ModTime(), info.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	sandbox.ForgetVerified()
	runsTheTwinsOwnCode(t, dir)
}

// TestCompilationsSealWhatTheyWrite: modules compiled at once into one
// cache all leave sealed entries, so none is removed at the next start,
// and the key stays its owner's alone.
func TestCompilationsSealWhatTheyWrite(t *testing.T) {
	dir := t.TempDir()
	names := []string{"counter", "loop", "sleep", "twins", "fill", "grow"}
	sb := newSandbox(t, sandbox.Config{CacheDir: dir})
	done := make(chan struct{})
	for _, name := range names {
		wasm, err := os.ReadFile(hostile(name))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer func() { done <- struct{}{} }()
			if _, err := sb.Compile(context.Background(), wasm); err != nil {
				t.Errorf("%s: %v", name, err) // not Fatal: another goroutine
			}
		}()
	}
	for range names {
		<-done
	}
	_ = sb.Close(context.Background())
	entries := cacheEntries(t, dir)
	if len(entries) != len(names) {
		t.Fatalf("%d entries for %d modules", len(entries), len(names))
	}
	for _, e := range entries {
		if _, err := os.Stat(e + ".seal"); err != nil {
			t.Errorf("%s: %v", e, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "packd-cache.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key: %v %v", fi, err)
	}
	removed := 0
	sb = newSandbox(t, sandbox.Config{CacheDir: dir, CacheRepaired: func(_ string, n int) { removed += n }})
	for _, name := range names {
		compile(t, sb, hostile(name))
	}
	if removed != 0 {
		t.Fatalf("%d sealed entries removed", removed)
	}
}
