package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kindgi/packd/internal/host"
)

// Pack is what a push publishes: the index's bytes, each module's bytes by
// the path the index names it by, and the index's signature (nil: none).
type Pack struct {
	Index     []byte
	Modules   map[string][]byte
	Signature []byte
}

// check says what keeps p from being pushed: an index that is not valid,
// or that names no digest of its modules (a pull trusts only what the index
// names), a module missing or not the bytes its digest names.
func (p Pack) check() (*host.Index, error) {
	idx, problems := host.ValidateIndex(p.Index)
	if len(problems) > 0 {
		return nil, fmt.Errorf("the index is not valid: %s", problems[0])
	}
	if idx.ModuleDigests == nil {
		return nil, fmt.Errorf("the index names no moduleDigests: a pulled pack is checked against them (packd index --digests)")
	}
	paths, err := modulePaths(idx)
	if err != nil {
		return nil, err
	}
	for _, path := range paths {
		b, ok := p.Modules[path]
		if !ok {
			return nil, fmt.Errorf("module %s, which the index names, is not in the pack", path)
		}
		if d := digestOf(b); d != idx.ModuleDigests[path] {
			return nil, fmt.Errorf("module %s is not the bytes the index's moduleDigests name (%s, not %s): packd index --digests again", path, d, idx.ModuleDigests[path])
		}
	}
	return idx, nil
}

// modulePaths are the index's module paths, each a file a pull writes:
// refused when there are more than a manifest may have layers, or when one
// would leave the pack's directory ("../x.wasm", "/x.wasm": in a pull it
// would name a file beside the modules, the index or its signature, or
// none at all).
func modulePaths(idx *host.Index) ([]string, error) {
	paths := idx.ModulePaths()
	if len(paths) > maxLayers {
		return nil, fmt.Errorf("the index names %d module paths, over %d", len(paths), maxLayers)
	}
	for _, path := range paths {
		if !filepath.IsLocal(filepath.FromSlash(path)) {
			return nil, fmt.Errorf("the index names module %q, which is not a path inside the pack", path)
		}
	}
	return paths, nil
}

// digestOf is b's "sha256:" digest.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Push publishes p at ref (a tag or a digest) and returns the digest of
// its manifest: the oci://…@sha256: reference that names these very bytes.
func Push(ctx context.Context, ref string, p Pack, o Options) (string, error) {
	digest, err := push(ctx, ref, p, o)
	return digest, cutError(err)
}

func push(ctx context.Context, ref string, p Pack, o Options) (string, error) {
	o = o.withDefaults()
	r, err := ParseRef(ref, o.PlainHTTP)
	if err != nil {
		return "", err
	}
	idx, err := p.check()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	opts := o.remoteOptions(ctx)

	layer := func(b []byte, mt, title string) (v1.Layer, v1.Descriptor, error) {
		l := static.NewLayer(b, types.MediaType(mt))
		h, err := l.Digest()
		return l, v1.Descriptor{MediaType: types.MediaType(mt), Size: int64(len(b)), Digest: h,
			Annotations: map[string]string{titleAnnotation: title}}, err
	}
	var layers []v1.Layer
	var descs []v1.Descriptor
	add := func(b []byte, mt, title string) error {
		l, d, err := layer(b, mt, title)
		if err == nil {
			layers, descs = append(layers, l), append(descs, d)
		}
		return err
	}
	err = add(p.Index, IndexMediaType, "index.json")
	// A module several tools share is one layer.
	seen := map[string]bool{}
	for _, path := range slices.Sorted(slices.Values(idx.ModulePaths())) {
		if d := idx.ModuleDigests[path]; err == nil && !seen[d] {
			seen[d] = true
			err = add(p.Modules[path], ModuleMediaType, path)
		}
	}
	if err == nil && p.Signature != nil {
		err = add(p.Signature, SignatureMediaType, "index.json.sig")
	}
	if err != nil {
		return "", err
	}
	empty := static.NewLayer([]byte("{}"), emptyMediaType)
	emptyDigest, _ := empty.Digest()
	for _, l := range append(layers, empty) {
		if err := remote.WriteLayer(r.Context(), l, opts...); err != nil {
			return "", fmt.Errorf("pushing a layer to %s: %w", r.Context(), err)
		}
	}
	m := v1.Manifest{
		SchemaVersion: 2, MediaType: manifestMediaType, ArtifactType: ArtifactType,
		Config: v1.Descriptor{MediaType: emptyMediaType, Size: 2, Digest: emptyDigest, Data: []byte("{}")},
		Layers: descs,
		Annotations: map[string]string{
			"org.opencontainers.image.version": idx.ArtifactVersion,
			"dev.kindgi.packd.pack-id":         idx.PackID,
			"dev.kindgi.packd.index-hash":      idx.Hash,
		},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	if err := remote.Put(r, rawManifest(raw), opts...); err != nil {
		return "", fmt.Errorf("pushing the manifest to %s: %w", r, err)
	}
	return digestOf(raw), nil
}

// rawManifest is a manifest's bytes as remote.Put takes them.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return manifestMediaType, nil }

// DigestRef is the reference naming the manifest digest in ref's
// repository: what a push returns, as oci://…@sha256:….
func DigestRef(ref, digest string, plainHTTP bool) (string, error) {
	r, err := ParseRef(ref, plainHTTP)
	if err != nil {
		return "", err
	}
	d, err := name.NewDigest(r.Context().Name()+"@"+digest, nameOptions(plainHTTP)...)
	if err != nil {
		return "", err
	}
	return Scheme + d.String(), nil
}

func nameOptions(plainHTTP bool) []name.Option {
	if plainHTTP {
		return []name.Option{name.Insecure}
	}
	return nil
}
