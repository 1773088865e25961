package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/kindgi/packd/internal/oci"
)

// TestPacksFromARegistry: a signed pack pushed with packd push is pulled
// by digest (packd check) and by tag (packd serve), verified, and served;
// an unsigned one is refused under --trust. Under --watch, a push that
// moves the tag reloads the service while callers call without pause, no
// call lost; a pull whose module layer the registry tampered with is
// refused (reload-failed, the pack served goes on) and tried again at the
// next look, once the registry serves the right bytes.
func TestPacksFromARegistry(t *testing.T) {
	reg, tamper, _ := tamperingRegistry(t)
	repo := reg + "/packs/hello"

	dir, module, index, wasm := helloModule(t)
	run := func(args ...string) runResult {
		t.Helper()
		r := packd(t, args...)
		if r.code != 0 {
			t.Fatalf("packd %s: %d %s %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r
	}
	run("keygen", "--out", filepath.Join(dir, "ops"))
	trust := filepath.Join(dir, "ops.pub")
	// publish makes, signs and pushes version v of the pack to tag; the
	// digest reference packd push prints.
	publish := func(v, tag string, sign bool) string {
		t.Helper()
		os.Remove(index)
		os.Remove(index + ".sig")
		run("index", "--index", index, "--pack-id", "hello", "--artifact-version", v, "--published-at", "2026-12-06T00:00:00.000Z", "--digests", module)
		if sign {
			run("sign", "--key", filepath.Join(dir, "ops.key"), "--index", index)
		}
		r := run("push", "--index", index, "--oci-plain-http", repo+":"+tag)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if !strings.HasPrefix(lines[len(lines)-1], repo+"@sha256:") {
			t.Fatalf("packd push printed %q", r.stdout)
		}
		return lines[len(lines)-1]
	}
	one := publish("one", "live", true)
	cache := t.TempDir()
	// packd check says where the pull put the index, for packd replay
	// (which, like index and sign, takes only an index on disk).
	r := run("check", "--index", one, "--oci-plain-http", "--oci-cache", cache, "--trust", trust)
	pulledIndex := ""
	if _, after, ok := strings.Cut(r.stdout, "its index: "); ok {
		pulledIndex, _, _ = strings.Cut(after, "\n")
	}
	if !strings.HasPrefix(pulledIndex, cache) || func() bool { _, err := os.Stat(pulledIndex); return err != nil }() {
		t.Errorf("packd check did not say where the pulled index is: %q", r.stdout)
	}
	for _, args := range [][]string{{"replay", "--index", one, dir}, {"index", "--index", one}, {"sign", "--key", filepath.Join(dir, "ops.key"), "--index", one}} {
		if r := packd(t, args...); r.code != exitUsage || !strings.Contains(r.stderr, "works on an index on disk") {
			t.Errorf("packd %s with an oci:// index: %d %q", args[0], r.code, r.stderr)
		}
	}
	if r := packd(t, "push", "--index", index, strings.TrimPrefix(repo, "oci://")+":live"); r.code != exitUsage || !strings.Contains(r.stderr, "oci://registry/repository:tag") {
		t.Errorf("packd push to a reference without oci://: %d %q", r.code, r.stderr)
	}
	publish("unsigned", "unsigned", false)
	if r := packd(t, "check", "--index", repo+":unsigned", "--oci-plain-http", "--oci-cache", cache, "--trust", trust); r.code == 0 || !strings.Contains(r.stdout+r.stderr, "The pack is not signed") {
		t.Errorf("packd check of an unsigned pack under --trust: %d %s %s", r.code, r.stdout, r.stderr)
	}

	s := start(t, repo+":live", nil, "--oci-plain-http", "--oci-cache", t.TempDir(), "--trust", trust, "--watch", "--oci-poll", "1s")
	if !strings.Contains(strings.Join(s.stderr.snapshot(), "\n"), `"kind":"pack-pulled"`) {
		t.Errorf("no pack-pulled record: %v", s.stderr.snapshot())
	}
	load := greetUnderLoad(s)
	reloads := func() int {
		n := 0
		for _, l := range s.stderr.snapshot() {
			if kindIs("reloaded")(l) || kindIs("reload-failed")(l) {
				n++
			}
		}
		return n
	}
	waitReload := func(n int) string {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var seen []string
			for _, l := range s.stderr.snapshot() {
				if kindIs("reloaded")(l) || kindIs("reload-failed")(l) {
					seen = append(seen, l)
				}
			}
			if len(seen) >= n {
				return seen[n-1]
			}
		}
		t.Fatalf("no reload %d: %v", n, s.stderr.snapshot())
		return ""
	}
	time.Sleep(1500 * time.Millisecond) // a poll or more: the tag has not moved, nothing reloads
	if n := reloads(); n != 0 {
		t.Fatalf("%d reloads before the tag moved", n)
	}
	publish("two", "live", true)
	if line := waitReload(1); !kindIs("reloaded")(line) || !strings.Contains(line, `"artifactVersion":"two"`) {
		t.Fatalf("the tag moved to two: %s", line)
	}
	// The registry spoils the module's bytes: the pull of three is refused.
	tamper.Store(sha256Hex(wasm))
	publish("three", "live", true)
	if line := waitReload(2); !kindIs("reload-failed")(line) || !strings.Contains(line, "hello.wasm") || !strings.Contains(line, "not the bytes its digest") {
		t.Fatalf("a pull of a tampered module: %s", line)
	}
	tamper.Store("")
	if line := waitReload(3); !kindIs("reloaded")(line) || !strings.Contains(line, `"artifactVersion":"three"`) {
		t.Fatalf("the pull after the registry mended: %s", line)
	}
	time.Sleep(300 * time.Millisecond)
	calls, failed, versions := load.finish()
	if failed != 0 || calls < 100 {
		t.Fatalf("%d of %d calls failed (want none)", failed, calls)
	}
	if !versions["one"] || !versions["two"] || !versions["three"] {
		t.Fatalf("the calls were answered by %v: want one, two and three", versions)
	}
	t.Logf("%d calls across three pulls and a refused one, none failed", calls)
}

// tamperingRegistry is an in-memory registry on loopback that spoils the
// bytes of the blob whose digest tamper holds, and counts the manifest
// HEADs it is asked (a tag's digest); its oci:// address.
func tamperingRegistry(t *testing.T) (string, *atomic.Value, *atomic.Int64) {
	var tamper atomic.Value
	tamper.Store("")
	var heads atomic.Int64
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/") {
			heads.Add(1)
		}
		d := tamper.Load().(string)
		if d == "" || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+d) {
			inner.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		b := rec.Body.Bytes()
		b[len(b)/2] ^= 0x20
		w.WriteHeader(rec.Code)
		_, _ = w.Write(b)
	}))
	t.Cleanup(reg.Close)
	return "oci://" + strings.TrimPrefix(reg.URL, "http://"), &tamper, &heads
}

// TestWatchTagBacksOffAFailingPull: a tag that names a pack whose pull
// fails (a spoilt layer) is pulled again after 1, 2, 4, 8… looks, not at
// every look: a bad manifest does not have every replica fetch its bytes
// and log a reload-failed each poll.
func TestWatchTagBacksOffAFailingPull(t *testing.T) {
	reg, tamper, heads := tamperingRegistry(t)
	_, module, index, wasm := helloModule(t)
	for _, args := range [][]string{{"index", "--index", index, "--pack-id", "hello", "--digests", module}, {"push", "--index", index, "--oci-plain-http", reg + "/packs/hello:live"}} {
		if r := packd(t, args...); r.code != 0 {
			t.Fatalf("packd %s: %d %s", args[0], r.code, r.stderr)
		}
	}
	tamper.Store(sha256Hex(wasm))
	p, err := oci.NewPuller(reg+"/packs/hello:live", t.TempDir(), oci.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var asks, failed atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchTag(ctx, p, 2*time.Millisecond, func() {
			asks.Add(1)
			if _, err := p.Pull(ctx); err != nil {
				failed.Add(1)
			}
		}, func(string) {})
	}()
	for deadline := time.Now().Add(30 * time.Second); heads.Load() < 60 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	cancel()
	<-done
	// Looks 1, 2, 4, 8, 16 and 32 pull (64 if the cancel came late).
	if n := heads.Load(); n < 60 {
		t.Fatalf("the watcher looked %d times in 30 s", n)
	}
	if a, f := asks.Load(), failed.Load(); a < 6 || a > 7 || f != a {
		t.Fatalf("over %d looks at a tag whose pull fails, %d pulls (%d failed): want 6 or 7", heads.Load(), a, f)
	}
}

// helloModule copies the hello pack's module into a directory of its own:
// the directory, the module's path, where its index goes, its bytes.
func helloModule(t *testing.T) (dir, module, index string, wasm []byte) {
	t.Helper()
	dir = t.TempDir()
	wasm, err := os.ReadFile(filepath.Join(helloDir, "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	module, index = filepath.Join(dir, "hello.wasm"), filepath.Join(dir, "index.json")
	if err := os.WriteFile(module, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, module, index, wasm
}

func sha256Hex(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }
