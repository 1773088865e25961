package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/sandbox"
)

// TestAnUnchangedModuleSkipsThePass: a module compiled once with a cache
// directory is not run through the fuel pass again by a later sandbox over
// the same directory (a warm boot), and it is metered the same: the same
// call burns the same fuel, and a loop still runs out of it.
func TestAnUnchangedModuleSkipsThePass(t *testing.T) {
	dir := t.TempDir()
	var fuel [2]int64
	for i := range fuel {
		before := sandbox.PassRuns()
		m := compile(t, newSandbox(t, sandbox.Config{CacheDir: dir}), hostile("work"))
		if ran := sandbox.PassRuns() - before; ran != int64(1-i) {
			t.Fatalf("compilation %d ran the pass %d times, want %d", i, ran, 1-i)
		}
		rep, err := callFuel(t, m, 0, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		fuel[i] = rep.FuelUsed
		loop := compile(t, newSandbox(t, sandbox.Config{CacheDir: dir}), hostile("loop"))
		if _, err := callFuel(t, loop, 1_000_000, 30*time.Second); !errors.Is(err, sandbox.ErrOutOfFuel) {
			t.Fatalf("compilation %d: a loop under a budget: %v, want out of fuel", i, err)
		}
	}
	if fuel[0] != fuel[1] {
		t.Fatalf("the same call burnt %d, then %d from the cache", fuel[0], fuel[1])
	}
}

// TestATamperedPassEntryIsNotUsed: an entry of the pass's cache changed on
// disk (here: its instrumented module swapped for the module as written,
// which counts no fuel, keeping the entry's length) does not match its
// seal: the pass runs again, the entry is written anew, and the module is
// metered (the loop runs out of fuel instead of running for ever).
func TestATamperedPassEntryIsNotUsed(t *testing.T) {
	dir := t.TempDir()
	compile(t, newSandbox(t, sandbox.Config{CacheDir: dir}), hostile("loop"))
	entries, _ := filepath.Glob(filepath.Join(dir, "packd-pass", "*", "*"))
	if len(entries) != 1 {
		t.Fatalf("pass cache entries %v, want one", entries)
	}
	b, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(hostile("loop"))
	if err != nil {
		t.Fatal(err)
	}
	// The Info's length, the Info, the module, the seal: the module as
	// written goes in the instrumented one's place.
	n := int(b[0]) | int(b[1])<<8
	tampered := append(append(append([]byte(nil), b[:4+n]...), raw...), b[len(b)-32:]...)
	if err := os.WriteFile(entries[0], tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	before := sandbox.PassRuns()
	m := compile(t, newSandbox(t, sandbox.Config{CacheDir: dir}), hostile("loop"))
	if sandbox.PassRuns() == before {
		t.Fatal("a tampered pass entry was used")
	}
	if _, err := callFuel(t, m, 1_000_000, 10*time.Second); !errors.Is(err, sandbox.ErrOutOfFuel) {
		t.Fatalf("the loop under a budget: %v, want out of fuel", err)
	}
	if again, _ := os.ReadFile(entries[0]); string(again) != string(b) {
		t.Fatal("the tampered entry was not written anew")
	}
}

// TestOtherExecutablesPassEntriesArePruned: the pass's entries of another
// packd (another build) are removed once not used for an hour; recent ones
// stay (another version may be running over the same directory).
func TestOtherExecutablesPassEntriesArePruned(t *testing.T) {
	dir := t.TempDir()
	old, recent := filepath.Join(dir, "packd-pass", "0123456789abcdef"), filepath.Join(dir, "packd-pass", "fedcba9876543210")
	for _, d := range []string{old, recent} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "entry"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, then, then); err != nil {
		t.Fatal(err)
	}
	compile(t, newSandbox(t, sandbox.Config{CacheDir: dir}), hostile("loop"))
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an old executable's entries are still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(recent, "entry")); err != nil {
		t.Fatalf("a recent executable's entries were removed: %v", err)
	}
}
