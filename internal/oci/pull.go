package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/signing"
)

// Bounds of what a pull takes, beyond Options.MaxBytes.
const (
	maxManifest = 4 << 20
	maxIndex    = 16 << 20
	maxLayers   = 4096
)

// Puller pulls one reference, as often as asked (at boot and at each
// reload), into a cache of pulls by digest. It is safe for concurrent use.
type Puller struct {
	ref   name.Reference
	text  string
	cache string
	o     Options

	mu   sync.Mutex
	last string // the digest of the last pull that succeeded
}

// Pulled is where a pull put the pack (a host.Config.Source's answer), the
// digest of its manifest, and what it cost (Cached: nothing was fetched).
type Pulled struct {
	host.Location
	Digest string
	Bytes  int64
	Cached bool
}

// NewPuller pulls ref (oci://…) into cacheDir (made when missing).
func NewPuller(ref, cacheDir string, o Options) (*Puller, error) {
	o = o.withDefaults()
	r, err := ParseRef(ref, o.PlainHTTP)
	if err != nil {
		return nil, err
	}
	if cacheDir == "" {
		return nil, errors.New("pulling a pack needs a cache directory (--oci-cache)")
	}
	return &Puller{ref: r, text: ref, cache: filepath.Join(cacheDir, "sha256"), o: o}, nil
}

// Ref is the reference pulled, as given.
func (p *Puller) Ref() string { return p.text }

// Last is the digest of the last pull that succeeded ("" before one).
func (p *Puller) Last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Moves reports whether the reference is a tag, which may name another
// manifest tomorrow (a digest never does).
func (p *Puller) Moves() bool {
	_, isDigest := p.ref.(name.Digest)
	return !isDigest
}

// Resolve asks the registry which manifest the reference names now (a tag
// moves; a digest never does).
func (p *Puller) Resolve(ctx context.Context) (string, error) {
	if d, ok := p.ref.(name.Digest); ok {
		return d.DigestStr(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	desc, err := remote.Head(p.ref, p.o.remoteOptions(ctx)...)
	if err != nil {
		return "", cutError(fmt.Errorf("asking %s for its digest: %w", p.text, err))
	}
	return desc.Digest.String(), nil
}

// Pull fetches the pack the reference names now, unless the cache holds
// it already, checks every byte against the digest naming it (the
// manifest's against the reference's or the cache's, each layer's against
// the manifest's, each module's against the index's moduleDigests), and
// says where it is. A pull by digest the cache holds asks no registry.
func (p *Puller) Pull(ctx context.Context) (Pulled, error) {
	pulled, err := p.pull(ctx)
	if err != nil {
		return Pulled{}, cutError(fmt.Errorf("pulling %s: %w", p.text, err))
	}
	p.mu.Lock()
	p.last = pulled.Digest
	p.mu.Unlock()
	return pulled, nil
}

func (p *Puller) pull(ctx context.Context) (Pulled, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	if d, ok := p.ref.(name.Digest); ok {
		if pulled, ok := p.cached(d.DigestStr()); ok {
			return pulled, nil
		}
	}
	opts := p.o.remoteOptions(ctx)
	desc, err := remote.Get(p.ref, opts...)
	if err != nil {
		return Pulled{}, err
	}
	digest := desc.Digest.String()
	if pulled, ok := p.cached(digest); ok {
		return pulled, nil
	}
	if string(desc.MediaType) != manifestMediaType {
		return Pulled{}, fmt.Errorf("it names a %s, not a pack (an OCI image manifest of artifactType %s)", desc.MediaType, ArtifactType)
	}
	raw := desc.Manifest
	if digestOf(raw) != digest { // remote.Get checks this of a digest, not of a tag
		return Pulled{}, fmt.Errorf("its manifest is not the bytes of its digest %s", digest)
	}
	m, err := readManifest(raw)
	if err != nil {
		return Pulled{}, err
	}
	repo := p.ref.Context()
	files := map[string][]byte{"manifest.json": raw}
	var total int64
	get := func(d v1.Descriptor, limit int64, what string) ([]byte, error) {
		b, err := fetch(repo, d, limit, what, opts)
		total += int64(len(b))
		return b, err
	}
	index, err := get(m.index, maxIndex, "the index")
	if err != nil {
		return Pulled{}, err
	}
	files["index.json"] = index
	idx, problems := host.ValidateIndex(index)
	if len(problems) > 0 {
		return Pulled{}, fmt.Errorf("its index is not valid: %s", problems[0])
	}
	if idx.ModuleDigests == nil {
		return Pulled{}, errors.New("its index names no moduleDigests: packd pulls only what an index names by digest")
	}
	fetched := map[string][]byte{}
	var onDisk int64
	paths, err := modulePaths(idx)
	if err != nil {
		return Pulled{}, err
	}
	for _, path := range paths {
		dg := idx.ModuleDigests[path]
		b, ok := fetched[dg]
		if !ok {
			d, ok := m.modules[dg]
			if !ok {
				return Pulled{}, fmt.Errorf("it has no layer of module %s (%s)", path, dg)
			}
			if b, err = get(d, p.o.MaxModuleBytes, "module "+path); err != nil {
				return Pulled{}, err
			}
			fetched[dg] = b
		}
		files[filepath.Join("modules", filepath.FromSlash(path))] = b
		// One layer may be named by many paths: what is written to the
		// cache is bounded as what is fetched is.
		if onDisk += int64(len(b)); onDisk > p.o.MaxBytes {
			return Pulled{}, fmt.Errorf("its index names %d MiB of modules (one layer under many paths), over what a pull may bring (%d MiB, --oci-max-mib)", onDisk>>20, p.o.MaxBytes>>20)
		}
	}
	if m.signature != nil {
		sig, err := get(*m.signature, signing.MaxEnvelope, "the signature")
		if err != nil {
			return Pulled{}, err
		}
		files["index.json.sig"] = sig
	}
	pulled, err := p.store(digest, files, m.signature != nil)
	pulled.Bytes = total
	return pulled, err
}

// manifest is what a pack's manifest names: its layers by kind.
type manifest struct {
	index     v1.Descriptor
	signature *v1.Descriptor
	modules   map[string]v1.Descriptor
}

// readManifest reads a pack's manifest: one index layer, at most one
// signature, modules by digest; layers of other media types are left alone.
func readManifest(raw []byte) (manifest, error) {
	var m v1.Manifest
	if len(raw) > maxManifest {
		return manifest{}, fmt.Errorf("its manifest is over %d MiB", maxManifest>>20)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return manifest{}, fmt.Errorf("its manifest is not valid JSON: %v", err)
	}
	if m.ArtifactType != ArtifactType {
		return manifest{}, fmt.Errorf("it is not a packd pack: its artifactType is %q, not %s", m.ArtifactType, ArtifactType)
	}
	if len(m.Layers) > maxLayers {
		return manifest{}, fmt.Errorf("its manifest has %d layers, over %d", len(m.Layers), maxLayers)
	}
	out := manifest{modules: map[string]v1.Descriptor{}}
	indexes := 0
	for _, l := range m.Layers {
		switch l.MediaType {
		case IndexMediaType:
			out.index = l
			indexes++
		case SignatureMediaType:
			if out.signature != nil {
				return manifest{}, errors.New("its manifest has two signature layers")
			}
			out.signature = &l
		case ModuleMediaType:
			out.modules[l.Digest.String()] = l
		}
	}
	if indexes != 1 {
		return manifest{}, fmt.Errorf("its manifest has %d index layers, not one", indexes)
	}
	return out, nil
}

// fetch reads one blob, at most limit bytes, and checks it is the bytes
// its digest names.
func fetch(repo name.Repository, d v1.Descriptor, limit int64, what string, opts []remote.Option) ([]byte, error) {
	if d.Size < 0 || d.Size > limit {
		return nil, fmt.Errorf("%s is %d bytes, over its bound of %d", what, d.Size, limit)
	}
	if d.Digest.Algorithm != "sha256" {
		return nil, fmt.Errorf("%s is named by a %s digest; packd takes sha256", what, d.Digest.Algorithm)
	}
	l, err := remote.Layer(repo.Digest(d.Digest.String()), opts...)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", what, err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", what, err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, io.LimitReader(rc, d.Size+1))
	b := buf.Bytes()
	// The registry library checks the digest too, at the end of the read;
	// a whole blob of the wrong bytes is named as such, whichever noticed.
	switch whole := int64(len(b)) == d.Size; {
	case whole && digestOf(b) != d.Digest.String():
		return nil, fmt.Errorf("%s is not the bytes its digest %s names: refused", what, d.Digest)
	case err != nil:
		return nil, fmt.Errorf("fetching %s: %w", what, err)
	case !whole:
		return nil, fmt.Errorf("%s is not the %d bytes its manifest says", what, d.Size)
	}
	return b, nil
}

// keepPulls is how many pulls the cache keeps: the one serving, the ones
// before it (a rollback by digest finds them), no more.
const keepPulls = 4

// pruneAfter is how long a pull beyond the newest keepPulls is kept after
// it was last used (the longest a load of it may take, and more).
const pruneAfter = 15 * time.Minute

// store writes a pull's files into the cache, at its digest, whole or not
// at all (a directory of its own, renamed into place), and forgets the
// oldest pulls.
func (p *Puller) store(digest string, files map[string][]byte, signed bool) (Pulled, error) {
	if err := os.MkdirAll(p.cache, 0o755); err != nil {
		return Pulled{}, fmt.Errorf("the cache: %w", err)
	}
	tmp, err := os.MkdirTemp(p.cache, ".pull-*")
	if err != nil {
		return Pulled{}, fmt.Errorf("the cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return Pulled{}, fmt.Errorf("the cache: %w", err)
	}
	defer root.Close()
	for path, b := range files {
		// The index's module paths are a publisher's: os.Root keeps
		// them inside the pull.
		if err := root.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return Pulled{}, fmt.Errorf("the cache: %w", err)
		}
		if err := root.WriteFile(path, b, 0o644); err != nil {
			return Pulled{}, fmt.Errorf("the cache: %w", err)
		}
	}
	dir := p.dir(digest)
	if err := os.Rename(tmp, dir); err != nil {
		if _, ok := p.cached(digest); !ok { // another pull put it there first
			return Pulled{}, fmt.Errorf("the cache: %w", err)
		}
	}
	p.prune(dir)
	return p.at(digest, signed), nil
}

func (p *Puller) dir(digest string) string {
	return filepath.Join(p.cache, digest[len("sha256:"):])
}

func (p *Puller) at(digest string, signed bool) Pulled {
	dir := p.dir(digest)
	out := Pulled{Location: host.Location{IndexPath: filepath.Join(dir, "index.json"), ModuleRoot: filepath.Join(dir, "modules")}, Digest: digest}
	if signed {
		out.SignaturePath = out.IndexPath + ".sig"
	}
	return out
}

// cached is the pull of digest the cache holds, when it holds it whole:
// its manifest has that digest, its index and signature are the bytes the
// manifest names (its modules are checked as they load, against the
// index's moduleDigests). A pull that is not whole is removed.
func (p *Puller) cached(digest string) (Pulled, bool) {
	if !isSHA256(digest) { // it names a directory of the cache
		return Pulled{}, false
	}
	dir := p.dir(digest)
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, os.ErrNotExist) {
		return Pulled{}, false
	}
	ok := err == nil && digestOf(raw) == digest
	var m manifest
	if ok {
		m, err = readManifest(raw)
		ok = err == nil && fileIs(filepath.Join(dir, "index.json"), m.index)
	}
	if ok && m.signature != nil {
		ok = fileIs(filepath.Join(dir, "index.json.sig"), *m.signature)
	}
	if !ok {
		_ = os.RemoveAll(dir)
		return Pulled{}, false
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now) // the newest pull is the last forgotten
	out := p.at(digest, m.signature != nil)
	out.Cached = true
	return out, true
}

func fileIs(path string, d v1.Descriptor) bool {
	b, err := os.ReadFile(path)
	return err == nil && digestOf(b) == d.Digest.String()
}

// prune forgets all but the keepPulls newest pulls (keep among them).
func (p *Puller) prune(keep string) {
	entries, err := os.ReadDir(p.cache)
	if err != nil {
		return
	}
	type pull struct {
		dir string
		at  time.Time
	}
	var pulls []pull
	for _, e := range entries {
		if !e.IsDir() || !isSHA256("sha256:"+e.Name()) { // a pull's, nothing else
			continue
		}
		if fi, err := e.Info(); err == nil {
			pulls = append(pulls, pull{filepath.Join(p.cache, e.Name()), fi.ModTime()})
		}
	}
	if len(pulls) <= keepPulls {
		return
	}
	slices.SortFunc(pulls, func(a, b pull) int { return b.at.Compare(a.at) })
	for _, old := range pulls[keepPulls:] {
		// Another packd over the same cache may be loading a pull it made
		// a moment ago: only what no one has used for a while goes.
		if old.dir != keep && time.Since(old.at) > pruneAfter {
			_ = os.RemoveAll(old.dir)
		}
	}
}

// isSHA256 says whether d is "sha256:" and 64 lowercase hex digits, all a
// cache directory's name may be made of.
func isSHA256(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	return ok && len(h) == 64 && strings.Trim(h, "0123456789abcdef") == ""
}
