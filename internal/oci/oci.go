// Package oci publishes packs to OCI registries and pulls them back: a
// pack is one artifact (an OCI image manifest whose artifactType says so)
// whose layers are its index, its modules and its signature, each a blob
// named by its SHA-256. A pull resolves a tag to a digest, fetches what the
// index names into a digest-addressed cache, bounded in bytes and time,
// and checks every byte against the digests that name it; what is pulled
// loads as a pack on disk does (host.Config.Source), with its signature
// checked there.
//
// The registry code is go-containerregistry's; auth comes from the docker
// config (authn.DefaultKeychain: $HOME/.docker/config.json, else
// $DOCKER_CONFIG's, with its credential helpers).
package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The artifact's media types (RATIONALE.md): the manifest's artifactType,
// and one per kind of layer. Its config is OCI's empty descriptor.
const (
	ArtifactType       = "application/vnd.kindgi.packd.pack.v1"
	IndexMediaType     = "application/vnd.kindgi.packd.index.v1+json"
	ModuleMediaType    = "application/wasm"
	SignatureMediaType = "application/vnd.kindgi.packd.signature.v1+json"
	manifestMediaType  = "application/vnd.oci.image.manifest.v1+json"
	emptyMediaType     = "application/vnd.oci.empty.v1+json"
	// titleAnnotation names a layer's file (the index's module path).
	titleAnnotation = "org.opencontainers.image.title"
)

// Scheme begins a pack's reference: oci://registry/repository:tag or
// oci://registry/repository@sha256:….
const Scheme = "oci://"

// IsRef reports whether s names a pack in a registry rather than a file.
func IsRef(s string) bool { return strings.HasPrefix(s, Scheme) }

// Defaults of Options.
const (
	DefaultMaxBytes = 1 << 30
	DefaultTimeout  = 5 * time.Minute
)

// Options say how to reach the registry and how much a pull may bring.
type Options struct {
	// PlainHTTP speaks HTTP, not HTTPS, to the registry (a loopback test
	// registry).
	PlainHTTP bool
	// MaxBytes bounds all one push's or pull's responses bring, manifest,
	// blobs and token exchanges together (default DefaultMaxBytes);
	// MaxModuleBytes each module (default MaxBytes).
	MaxBytes, MaxModuleBytes int64
	// Timeout bounds one push or pull (default DefaultTimeout).
	Timeout time.Duration
	// Transport is the HTTP transport (default remote.DefaultTransport);
	// Keychain where credentials come from (default authn.DefaultKeychain).
	Transport http.RoundTripper
	Keychain  authn.Keychain
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxModuleBytes <= 0 {
		o.MaxModuleBytes = o.MaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Transport == nil {
		o.Transport = remote.DefaultTransport
	}
	if o.Keychain == nil {
		o.Keychain = authn.DefaultKeychain
	}
	return o
}

// ParseRef reads an oci:// reference: a tag (":latest" when it names
// neither) or a digest.
func ParseRef(s string, plainHTTP bool) (name.Reference, error) {
	if !IsRef(s) {
		return nil, fmt.Errorf("%q is not an oci:// reference", s)
	}
	ref, err := name.ParseReference(strings.TrimPrefix(s, Scheme), nameOptions(plainHTTP)...)
	if err != nil {
		return nil, fmt.Errorf("%q is not a registry reference (oci://registry/repository:tag or @sha256:…): %v", s, err)
	}
	return ref, nil
}

// remoteOptions are go-containerregistry's options of one push or pull:
// its context, credentials, and a transport whose responses together may
// bring at most o.MaxBytes.
func (o Options) remoteOptions(ctx context.Context) []remote.Option {
	budget := &atomic.Int64{}
	budget.Store(o.MaxBytes)
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(o.Keychain),
		remote.WithTransport(boundedTransport{base: o.Transport, left: budget, max: o.MaxBytes}),
		remote.WithUserAgent("packd"),
	}
}

// maxErrorText is the most of an error's text a pull or a push says: a
// registry writes part of it (an error body of up to 64 KiB), and an
// index's module path may be as long as the index.
const maxErrorText = 1 << 10

// cutError is err, its text cut to maxErrorText bytes.
func cutError(err error) error {
	if err == nil || len(err.Error()) <= maxErrorText {
		return err
	}
	return cutErr{err}
}

type cutErr struct{ err error }

func (e cutErr) Error() string {
	return strings.ToValidUTF8(e.err.Error()[:maxErrorText], "") + "… (cut short)"
}

func (e cutErr) Unwrap() error { return e.err }

// errTooMuch is a pull that brought more than its bound.
var errTooMuch = errors.New("the registry sent more than the pull may bring")

// boundedTransport counts what every response's body brings against one
// budget, and fails the read that would pass it.
type boundedTransport struct {
	base http.RoundTripper
	left *atomic.Int64
	max  int64
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	b := &boundedBody{ReadCloser: resp.Body, t: t, own: -1}
	// A manifest is read whole before it can be checked (the registry
	// library would take 100 MiB of one): its own, smaller bound.
	if strings.Contains(req.URL.Path, "/manifests/") {
		b.own = maxManifest
	}
	resp.Body = b
	return resp, nil
}

// boundedBody is a response's body, counted against the pull's budget and,
// when own ≥ 0, against its own.
type boundedBody struct {
	io.ReadCloser
	t   boundedTransport
	own int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.t.left.Add(-int64(n)) < 0 {
		return n, fmt.Errorf("%w (%d MiB, --oci-max-mib)", errTooMuch, b.t.max>>20)
	}
	if b.own >= 0 {
		if b.own -= int64(n); b.own < 0 {
			return n, fmt.Errorf("the registry sent a manifest over %d MiB", maxManifest>>20)
		}
	}
	return n, err
}
