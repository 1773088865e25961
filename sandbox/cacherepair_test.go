package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/sandbox"
)

// TestACorruptCacheEntryIsRepaired: an entry of the compilation cache cut
// short or overwritten (truncate -s 20, garbage) does not fail the module
// on every start: the entries are removed, the module compiles anew and
// runs, and CacheRepaired says so (on main every compile answered
// "invalid module: compilationcache: ... EOF", a crash loop for a service).
func TestACorruptCacheEntryIsRepaired(t *testing.T) {
	for _, corrupt := range []func(string) error{
		func(p string) error { return os.Truncate(p, 20) },
		func(p string) error { return os.WriteFile(p, []byte("garbage, not a cache entry"), 0o600) },
	} {
		dir := t.TempDir()
		sb := newSandbox(t, sandbox.Config{CacheDir: dir})
		compile(t, sb, hostile("counter"))
		_ = sb.Close(context.Background())
		entries, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
		if len(entries) == 0 {
			t.Fatal("no cache entry was written")
		}
		for _, e := range entries {
			if err := corrupt(e); err != nil {
				t.Fatal(err)
			}
		}
		var why string
		removed := 0
		sb = newSandbox(t, sandbox.Config{CacheDir: dir, CacheRepaired: func(w string, n int) { why, removed = w, n }})
		m := compile(t, sb, hostile("counter"))
		if !strings.Contains(why, "compilationcache") || removed != len(entries) {
			t.Fatalf("repaired: %q, %d of %d entries removed", why, removed, len(entries))
		}
		if _, err, _ := call(t, m, 10*time.Second); err != nil {
			t.Fatalf("the module after the repair: %v", err)
		}
	}
}
