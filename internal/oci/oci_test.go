package oci_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
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

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kindgi/packd/internal/oci"
)

// testPack is a pack of two modules (the bytes need not be wasm: a push
// and a pull check digests, not code), its index naming their digests.
func testPack(t *testing.T) oci.Pack {
	t.Helper()
	a, b := []byte("\x00asm module a"), []byte("\x00asm module b")
	index := fmt.Sprintf(`{"v": 1, "packId": "p", "packVersion": "1.0.0", "artifactVersion": "p-1.0.0",
  "publishedAt": "2026-11-29T00:00:00.000Z",
  "tools": [
    {"id": "p.a", "version": "1.0.0", "description": "a", "input": {"type": "object"}, "output": {"type": "object"}, "modulePath": "a.wasm"},
    {"id": "p.b", "version": "1.0.0", "description": "b", "input": {"type": "object"}, "output": {"type": "object"}, "modulePath": "lib/b.wasm"}
  ],
  "guardrails": [], "agents": [], "flows": [],
  "moduleDigests": {"a.wasm": %q, "lib/b.wasm": %q}}`, sha(a), sha(b))
	return oci.Pack{Index: []byte(index), Modules: map[string][]byte{"a.wasm": a, "lib/b.wasm": b}, Signature: []byte(`{"a signature": true}`)}
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// testRegistry serves go-containerregistry's in-memory registry on
// loopback, through wrap when set; requests counts what it was asked.
type testRegistry struct {
	host     string
	requests atomic.Int64
}

func startRegistry(t *testing.T, wrap func(http.Handler) http.Handler) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

func (r *testRegistry) ref(tail string) string { return "oci://" + r.host + "/packs/" + tail }

var plain = oci.Options{PlainHTTP: true}

func TestPushThenPullByTagAndByDigest(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, nil)
	pack := testPack(t)
	digest, err := oci.Push(ctx, reg.ref("echo:v1"), pack, plain)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	p, err := oci.NewPuller(reg.ref("echo:v1"), cache, plain)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != digest || got.Cached || p.Last() != digest {
		t.Fatalf("pulled %+v (last %s), pushed %s", got, p.Last(), digest)
	}
	want := map[string][]byte{got.IndexPath: pack.Index, got.SignaturePath: pack.Signature,
		filepath.Join(got.ModuleRoot, "a.wasm"): pack.Modules["a.wasm"], filepath.Join(got.ModuleRoot, "lib", "b.wasm"): pack.Modules["lib/b.wasm"]}
	for path, b := range want {
		if on, err := os.ReadFile(path); err != nil || !bytes.Equal(on, b) {
			t.Errorf("%s holds %q (%v), want %q", path, on, err, b)
		}
	}
	if d, err := p.Resolve(ctx); err != nil || d != digest {
		t.Errorf("the tag resolves to %s (%v), want %s", d, err, digest)
	}

	// By digest, from the cache: the registry is not asked.
	byDigest, err := oci.DigestRef(reg.ref("echo:v1"), digest, true)
	if err != nil {
		t.Fatal(err)
	}
	dp, err := oci.NewPuller(byDigest, cache, plain)
	if err != nil {
		t.Fatal(err)
	}
	before := reg.requests.Load()
	again, err := dp.Pull(ctx)
	if err != nil || !again.Cached || again.IndexPath != got.IndexPath {
		t.Fatalf("a pull by digest the cache holds: %+v, %v", again, err)
	}
	if n := reg.requests.Load() - before; n != 0 {
		t.Errorf("a cached pull by digest asked the registry %d times", n)
	}

	// By digest into a new cache: fetched, the same bytes.
	fresh, err := oci.NewPuller(byDigest, t.TempDir(), plain)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := fresh.Pull(ctx); err != nil || f.Cached || f.Digest != digest {
		t.Fatalf("a pull by digest: %+v, %v", f, err)
	}

	// A cached pull whose index was changed on disk is pulled again.
	if err := os.WriteFile(got.IndexPath, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := dp.Pull(ctx); err != nil || r.Cached {
		t.Fatalf("a pull over a spoilt cache: %+v, %v", r, err)
	}
	if on, _ := os.ReadFile(got.IndexPath); !bytes.Equal(on, pack.Index) {
		t.Errorf("the spoilt index was not pulled again: %q", on)
	}
}

func TestATamperedLayerIsRefused(t *testing.T) {
	ctx := context.Background()
	pack := testPack(t)
	moduleDigest := sha(pack.Modules["lib/b.wasm"])
	var tamper atomic.Bool
	reg := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !tamper.Load() || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+moduleDigest) {
				h.ServeHTTP(w, r)
				return
			}
			// A registry (or a hop before it) serving other bytes of the
			// same length under the module's digest.
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			b := rec.Body.Bytes()
			b[len(b)-1] ^= 1
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(b)
		})
	})
	digest, err := oci.Push(ctx, reg.ref("echo:v1"), pack, plain)
	if err != nil {
		t.Fatal(err)
	}
	tamper.Store(true)
	cache := t.TempDir()
	p, _ := oci.NewPuller(reg.ref("echo:v1"), cache, plain)
	_, err = p.Pull(ctx)
	if err == nil {
		t.Fatal("a pack with a tampered module layer was pulled")
	}
	if !strings.Contains(err.Error(), "lib/b.wasm") {
		t.Errorf("the refusal does not name the module: %v", err)
	}
	if p.Last() != "" {
		t.Errorf("a refused pull counts as the last: %s", p.Last())
	}
	if _, err := os.Stat(filepath.Join(cache, "sha256", strings.TrimPrefix(digest, "sha256:"))); !os.IsNotExist(err) {
		t.Errorf("a refused pull left its files in the cache (%v)", err)
	}
}

func TestAPullIsBounded(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, nil)
	pack := testPack(t)
	pack.Modules["a.wasm"] = bytes.Repeat([]byte{'a'}, 1<<20)
	pack.Index = []byte(strings.Replace(string(pack.Index), sha([]byte("\x00asm module a")), sha(pack.Modules["a.wasm"]), 1))
	if _, err := oci.Push(ctx, reg.ref("big:v1"), pack, plain); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    oci.Options
		want string
	}{
		{oci.Options{PlainHTTP: true, MaxModuleBytes: 1 << 19}, "module a.wasm is 1048576 bytes, over its bound"},
		{oci.Options{PlainHTTP: true, MaxBytes: 1 << 19, MaxModuleBytes: 1 << 21}, "the registry sent more than the pull may bring"},
	} {
		p, _ := oci.NewPuller(reg.ref("big:v1"), t.TempDir(), c.o)
		if _, err := p.Pull(ctx); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("with %+v: %v, want %q", c.o, err, c.want)
		}
	}
	// One 1 MiB layer named by 64 paths: 1 MiB to fetch, 64 MiB to write.
	pushRaw(t, reg.ref("many:v1"), manyPaths(64, pack.Modules["a.wasm"]), map[string][]byte{"m0000.wasm": pack.Modules["a.wasm"]})
	cache := t.TempDir()
	p, _ := oci.NewPuller(reg.ref("many:v1"), cache, oci.Options{PlainHTTP: true, MaxBytes: 8 << 20})
	if _, err := p.Pull(ctx); err == nil || !strings.Contains(err.Error(), "one layer under many paths") {
		t.Errorf("one layer under 64 paths: %v", err)
	}
	if left, _ := os.ReadDir(cache); len(left) != 0 {
		t.Errorf("a refused pull left %v in the cache", left)
	}
	// 5,000 paths of one tiny module: a few bytes each, a file each.
	tiny := []byte("\x00asm")
	pushRaw(t, reg.ref("files:v1"), manyPaths(5000, tiny), map[string][]byte{"m0000.wasm": tiny})
	p, _ = oci.NewPuller(reg.ref("files:v1"), cache, plain)
	if _, err := p.Pull(ctx); err == nil || !strings.Contains(err.Error(), "5000 module paths, over 4096") {
		t.Errorf("5,000 module paths: %v", err)
	}
}

// TestAHostileRegistryIsCutShort: a registry that answers a manifest of
// 64 MiB has packd stop reading at 4 MiB (the registry library would
// read 100 MiB of it into memory), and one that stops sending a module
// half-way fails the pull at its timeout, not never. What a registry or an
// index writes reaches an error (a log line) cut to 1 KiB.
func TestAHostileRegistryIsCutShort(t *testing.T) {
	ctx := context.Background()
	var sent atomic.Int64
	var stall atomic.Bool
	reg := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/huge"):
				w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
				chunk := bytes.Repeat([]byte{' '}, 64<<10)
				for range 1024 { // 64 MiB
					if _, err := w.Write(chunk); err != nil {
						return
					}
					sent.Add(int64(len(chunk)))
				}
			case strings.Contains(r.URL.Path, "/manifests/loud"):
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write(bytes.Repeat([]byte("the registry says much "), 2600))
			case stall.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/"):
				w.Header().Set("Content-Length", "1048576")
				_, _ = w.Write([]byte("\x00asm"))
				w.(http.Flusher).Flush()
				select { // the rest never comes
				case <-r.Context().Done():
				case <-time.After(20 * time.Second):
				}
			default:
				h.ServeHTTP(w, r)
			}
		})
	})
	p, _ := oci.NewPuller(reg.ref("p:huge"), t.TempDir(), plain)
	if _, err := p.Pull(ctx); err == nil || !strings.Contains(err.Error(), "manifest over 4 MiB") {
		t.Errorf("a 64 MiB manifest: %v", err)
	}
	if n := sent.Load(); n > 16<<20 {
		t.Errorf("the registry got %d MiB of its manifest out before packd stopped reading", n>>20)
	}
	// What a registry or an index writes reaches an error (a log line) cut
	// short: a 60 KiB error body, a module path of 100 KiB.
	p, _ = oci.NewPuller(reg.ref("p:loud"), t.TempDir(), plain)
	if _, err := p.Pull(ctx); err == nil || len(err.Error()) > 1100 || !strings.Contains(err.Error(), "the registry says much") {
		t.Errorf("a registry's 60 KiB error body: %d bytes of error: %.300v", len(fmt.Sprint(err)), err)
	}
	long := testPack(t)
	path := strings.Repeat("d/", 50<<10) + "b.wasm"
	long.Index = bytes.ReplaceAll(long.Index, []byte(`"lib/b.wasm"`), []byte(`"`+path+`"`))
	pushRaw(t, reg.ref("p:long"), long.Index, map[string][]byte{"a.wasm": long.Modules["a.wasm"]}) // no layer of it
	p, _ = oci.NewPuller(reg.ref("p:long"), t.TempDir(), plain)
	if _, err := p.Pull(ctx); err == nil || len(err.Error()) > 1100 || !strings.Contains(err.Error(), "no layer of module d/d/") {
		t.Errorf("a missing module of a 100 KiB path: %d bytes of error", len(fmt.Sprint(err)))
	}

	if _, err := oci.Push(ctx, reg.ref("p:v1"), testPack(t), plain); err != nil {
		t.Fatal(err)
	}
	stall.Store(true)
	p, _ = oci.NewPuller(reg.ref("p:v1"), t.TempDir(), oci.Options{PlainHTTP: true, Timeout: 500 * time.Millisecond})
	start := time.Now()
	_, err := p.Pull(ctx)
	if took := time.Since(start); err == nil || took > 10*time.Second {
		t.Errorf("a stalled blob: %v after %v (the timeout is 500 ms)", err, took)
	}
}

// TestTheCacheKeepsTheNewestPulls: a pull keeps the four newest pulls in
// the cache and removes older ones, but not one used in the last minutes
// (another packd over the same cache may be loading it), nor anything not
// named by a digest.
func TestTheCacheKeepsTheNewestPulls(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, nil)
	if _, err := oci.Push(ctx, reg.ref("p:v1"), testPack(t), plain); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	dirs := filepath.Join(cache, "sha256")
	entry := func(i int, age time.Duration) string {
		d := filepath.Join(dirs, fmt.Sprintf("%064x", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(d, at, at); err != nil {
			t.Fatal(err)
		}
		return d
	}
	var young, old []string
	for i := range 3 {
		young = append(young, entry(i, time.Minute))
		old = append(old, entry(10+i, time.Hour))
	}
	mine := filepath.Join(dirs, "not-a-pull")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-48 * time.Hour)
	_ = os.Chtimes(mine, past, past)
	p, _ := oci.NewPuller(reg.ref("p:v1"), cache, plain)
	if _, err := p.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	exists := func(d string) bool { _, err := os.Stat(d); return err == nil }
	for _, d := range append(young, mine) {
		if !exists(d) {
			t.Errorf("%s was removed", filepath.Base(d))
		}
	}
	for _, d := range old {
		if exists(d) {
			t.Errorf("%s, older than the four newest and unused for an hour, is kept", filepath.Base(d))
		}
	}
	// Eight pulls, all but the new one used a minute ago: none goes.
	for i := range 3 {
		young = append(young, entry(20+i, time.Minute))
	}
	for _, d := range young {
		_ = os.Chtimes(d, time.Now().Add(-time.Minute), time.Now().Add(-time.Minute))
	}
	two := testPack(t)
	two.Index = bytes.Replace(two.Index, []byte(`"p-1.0.0"`), []byte(`"p-1.0.1"`), 1)
	if _, err := oci.Push(ctx, reg.ref("p:v2"), two, plain); err != nil {
		t.Fatal(err)
	}
	p, _ = oci.NewPuller(reg.ref("p:v2"), cache, plain)
	if pulled, err := p.Pull(ctx); err != nil || pulled.Cached {
		t.Fatalf("a new pull: %+v %v", pulled, err)
	}
	for _, d := range young {
		if !exists(d) {
			t.Errorf("%s, used a minute ago, was removed", filepath.Base(d))
		}
	}
}

func TestOnlyPacksArePulledAndPushed(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, nil)
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(strings.TrimPrefix(reg.ref("image:v1"), "oci://"), name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	p, _ := oci.NewPuller(reg.ref("image:v1"), t.TempDir(), plain)
	if _, err := p.Pull(ctx); err == nil || !strings.Contains(err.Error(), "not a pack") && !strings.Contains(err.Error(), "not a packd pack") {
		t.Errorf("pulling a container image: %v", err)
	}

	pack := testPack(t)
	pack.Modules["a.wasm"] = []byte("other bytes")
	if _, err := oci.Push(ctx, reg.ref("p:v1"), pack, plain); err == nil || !strings.Contains(err.Error(), "module a.wasm is not the bytes") {
		t.Errorf("pushing a module its digest does not name: %v", err)
	}
	pack = testPack(t)
	pack.Index = []byte(strings.Split(string(pack.Index), `,
  "moduleDigests"`)[0] + "}")
	if _, err := oci.Push(ctx, reg.ref("p:v1"), pack, plain); err == nil || !strings.Contains(err.Error(), "moduleDigests") {
		t.Errorf("pushing an index without moduleDigests: %v", err)
	}
	if _, err := oci.NewPuller("/app/index.json", t.TempDir(), plain); err == nil {
		t.Error("a file path was taken for a reference")
	}
}

// manyPaths is an index of n tools, each of its own module path, every
// path naming module's digest.
func manyPaths(n int, module []byte) []byte {
	var tools []string
	digests := map[string]string{}
	for i := range n {
		path := fmt.Sprintf("m%04d.wasm", i)
		tools = append(tools, fmt.Sprintf(`{"id": "p.t%04d", "version": "1.0.0", "description": "t", "input": {"type": "object"}, "output": {"type": "object"}, "modulePath": %q}`, i, path))
		digests[path] = sha(module)
	}
	d, _ := json.Marshal(digests)
	return []byte(fmt.Sprintf(`{"v": 1, "packId": "p", "packVersion": "1.0.0", "artifactVersion": "p-1.0.0", "publishedAt": "2026-11-29T00:00:00.000Z",
  "tools": [%s], "guardrails": [], "agents": [], "flows": [], "moduleDigests": %s}`, strings.Join(tools, ","), d))
}

// pushRaw writes a pack's artifact as a hostile publisher might, with no
// check of what it holds: the index, then each module, as layers.
func pushRaw(t *testing.T, ref string, index []byte, modules map[string][]byte) {
	t.Helper()
	r, err := name.ParseReference(strings.TrimPrefix(ref, "oci://"), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	var descs []string
	put := func(b []byte, mt, title string) {
		l := static.NewLayer(b, types.MediaType(mt))
		if err := remote.WriteLayer(r.Context(), l); err != nil {
			t.Fatal(err)
		}
		d, _ := l.Digest()
		descs = append(descs, fmt.Sprintf(`{"mediaType":%q,"size":%d,"digest":%q,"annotations":{"org.opencontainers.image.title":%q}}`, mt, len(b), d, title))
	}
	put([]byte("{}"), "application/vnd.oci.empty.v1+json", "")
	config := descs[0]
	descs = descs[:0]
	put(index, oci.IndexMediaType, "index.json")
	for path, b := range modules {
		put(b, oci.ModuleMediaType, path)
	}
	raw := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":%q,"config":%s,"layers":[%s]}`,
		oci.ArtifactType, config, strings.Join(descs, ","))
	if err := remote.Put(r, rawManifestFor(raw)); err != nil {
		t.Fatal(err)
	}
}

type rawManifestFor string

func (m rawManifestFor) RawManifest() ([]byte, error) { return []byte(m), nil }
func (m rawManifestFor) MediaType() (types.MediaType, error) {
	return "application/vnd.oci.image.manifest.v1+json", nil
}

// TestAModulePathLeavingThePackIsRefused: an index whose module path
// climbs out of the pack's modules ("../index.json") would have a pull
// write that module over the index beside them (or outside the cache): it
// is refused at the push and at the pull, and nothing is cached.
func TestAModulePathLeavingThePackIsRefused(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, nil)
	for _, path := range []string{"../index.json", "../../../outside.wasm", "/abs.wasm"} {
		pack := testPack(t)
		evil := []byte(`{"v": 1}`)
		pack.Index = bytes.Replace(pack.Index, []byte(`"lib/b.wasm"`), []byte(fmt.Sprintf("%q", path)), -1)
		pack.Index = bytes.Replace(pack.Index, []byte(sha(pack.Modules["lib/b.wasm"])), []byte(sha(evil)), 1)
		pack.Modules = map[string][]byte{"a.wasm": pack.Modules["a.wasm"], path: evil}
		if _, err := oci.Push(ctx, reg.ref("evil:v1"), pack, plain); err == nil || !strings.Contains(err.Error(), "not a path inside the pack") {
			t.Errorf("pushing an index naming module %q: %v", path, err)
		}
		pushRaw(t, reg.ref("evil:v1"), pack.Index, pack.Modules)
		cache := t.TempDir()
		p, _ := oci.NewPuller(reg.ref("evil:v1"), cache, plain)
		if _, err := p.Pull(ctx); err == nil || !strings.Contains(err.Error(), "not a path inside the pack") {
			t.Errorf("pulling an index naming module %q: %v", path, err)
		}
		if left, _ := os.ReadDir(cache); len(left) != 0 {
			t.Errorf("a refused pull left %v in the cache", left)
		}
	}
}

// TestCredentialsComeFromTheDockerConfig: a registry that wants a
// password gets the one the docker config names for it, and a pull
// without it is refused.
func TestCredentialsComeFromTheDockerConfig(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, pw, ok := r.BasicAuth(); !ok || u != "ci" || pw != "s3cret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="packs"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DOCKER_CONFIG", filepath.Join(home, ".docker"))
	pack := testPack(t)
	if _, err := oci.Push(ctx, reg.ref("private:v1"), pack, plain); err == nil {
		t.Fatal("a push without credentials was taken")
	}
	if err := os.MkdirAll(filepath.Join(home, ".docker"), 0o700); err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("ci:s3cret"))
	config := fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, reg.host, auth)
	if err := os.WriteFile(filepath.Join(home, ".docker", "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(ctx, reg.ref("private:v1"), pack, plain); err != nil {
		t.Fatal(err)
	}
	p, _ := oci.NewPuller(reg.ref("private:v1"), t.TempDir(), plain)
	if _, err := p.Pull(ctx); err != nil {
		t.Fatal(err)
	}
}
