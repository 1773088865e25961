package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchReloadsAConfigMapSwap: packd serve --watch over a directory laid
// out as the kubelet lays out a ConfigMap (files behind a ..data symlink
// that is swapped whole) reloads within 2 s of the swap, through the same
// path as SIGHUP, while callers call without pause: no call fails, and the
// calls after it answer from the new pack. A touch that changes nothing
// reloads nothing.
func TestWatchReloadsAConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	wasm, err := os.ReadFile(filepath.Join(helloDir, "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	index, _ := os.ReadFile(filepath.Join(helloDir, "index.json"))
	version := func(v string) []byte {
		return []byte(strings.Replace(string(index), `"artifactVersion": "`, `"artifactVersion": "`+v+`-`, 1))
	}
	generation := func(name, v string) {
		t.Helper()
		g := filepath.Join(dir, name)
		if err := os.Mkdir(g, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(g, "index.json"), version(v), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(g, "hello.wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	generation("..2026_12_06_a", "one")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("..2026_12_06_a", filepath.Join(dir, "..data")))
	must(os.Symlink("..data/index.json", filepath.Join(dir, "index.json")))
	must(os.Symlink("..data/hello.wasm", filepath.Join(dir, "hello.wasm")))
	s := start(t, filepath.Join(dir, "index.json"), nil, "--watch")

	load := greetUnderLoad(s)
	time.Sleep(300 * time.Millisecond)
	// A touch: nothing changes, nothing reloads.
	now := time.Now()
	must(os.Chtimes(filepath.Join(dir, "..2026_12_06_a", "index.json"), now, now))
	time.Sleep(time.Second)
	// The kubelet's swap: a new generation, a new link, renamed over ..data.
	generation("..2026_12_06_b", "two")
	must(os.Symlink("..2026_12_06_b", filepath.Join(dir, "..data_tmp")))
	swapped := time.Now()
	must(os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	line := s.stderr.waitFor(t, 10*time.Second, kindIs("reloaded"))
	took := time.Since(swapped)
	time.Sleep(300 * time.Millisecond)
	calls, failed, versions := load.finish()
	if took > 2*time.Second || !strings.Contains(line, `"artifactVersion":"two-`) {
		t.Fatalf("reloaded %v after the swap: %s", took, line)
	}
	reloads := 0
	for _, l := range s.stderr.snapshot() {
		if kindIs("reloading")(l) {
			reloads++
		}
	}
	if failed != 0 || calls < 50 || reloads != 1 {
		t.Fatalf("%d of %d calls failed, %d reloads (want none failed, and one reload: the touch reloads nothing)", failed, calls, reloads)
	}
	if len(versions) != 2 {
		t.Fatalf("the calls were answered by %v: want the old pack's and the new's", versions)
	}
	t.Logf("reloaded %v after the swap; %d calls, none failed", took.Round(time.Millisecond), calls)
}

// greetLoad is three callers calling hello.greet on a served pack without
// pause, and what they met.
type greetLoad struct {
	stop          atomic.Bool
	wg            sync.WaitGroup
	calls, failed atomic.Int64
	mu            sync.Mutex
	versions      map[string]bool // the artifact versions that answered
}

// greetUnderLoad starts the callers on s; finish stops them.
func greetUnderLoad(s *served) *greetLoad {
	l := &greetLoad{versions: map[string]bool{}}
	for range 3 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for !l.stop.Load() {
				req, _ := http.NewRequest("POST", s.base+"/v1/invoke", strings.NewReader(invokeBody("hello.greet", "", `{"name":"Ada"}`, conformanceCtx)))
				req.Header = http.Header{"Kindgi-Pack-Token": {s.token}, "Content-Type": {"application/json"}}
				res, err := client.Do(req)
				l.calls.Add(1)
				if err != nil || res.StatusCode != 200 {
					l.failed.Add(1)
				}
				if err == nil {
					l.mu.Lock()
					l.versions[res.Header.Get("Kindgi-Artifact-Version")] = true
					l.mu.Unlock()
					res.Body.Close()
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	return l
}

// finish stops the callers and says how many calls they made, how many
// failed, and which versions answered.
func (l *greetLoad) finish() (calls, failed int64, versions map[string]bool) {
	l.stop.Store(true)
	l.wg.Wait()
	return l.calls.Load(), l.failed.Load(), l.versions
}
