package egress

// Credentials the guest never holds: the index binds a secret of the call
// (ctx.secrets) or a process variable to the requests that go to a host,
// and packd writes it into those requests itself, after the allowlist
// check and before the dial's address check lets any byte leave. The host
// withholds the secret from the guest; here it is attached, kept off
// every other host (redirects included), off plain http (but to an
// address the operator allows), and scrubbed from what the guest reads
// back.

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kindgi/packd/abi"
)

// Credential is one binding of network.credentials: the call's secret
// Secret, or the process variable Env, written in Header (Authorization
// by default) after Scheme and a space when Scheme is set.
type Credential struct {
	Secret, Env    string
	Header, Scheme string
}

// Name is what records say of the credential: its source, never its
// value.
func (c Credential) Name() string {
	if c.Env != "" {
		return "env " + c.Env
	}
	return "secret " + c.Secret
}

// attachCredential writes the host's credential into h. A guest header of
// the same name is refused (the credential is packd's to write), and so
// is a request whose call lacks the secret: it is not sent unauthenticated
// in the guest's stead. It answers the refusal, or nil.
func (k *Call) attachCredential(scheme, host string, h http.Header) *abi.HTTPAnswer {
	k.attached = ""
	c, ok := byHost(k.policy.Credentials, host)
	if !ok {
		return nil
	}
	if scheme != "https" && !k.c.operatorAllows(host) {
		return refused(abi.EgressCredentialNeedsHTTPS, "the credential the index binds to %s (%s) goes over https only (plain http only to an address --network-allow names)", host, c.Name())
	}
	if _, set := h[http.CanonicalHeaderKey(c.Header)]; set {
		return refused(abi.EgressBadRequest, "header %q is packd's to write for %s: the index binds a credential to it (%s)", c.Header, host, c.Name())
	}
	// A byte range of an answer that echoes the credential would hand it
	// over a piece at a time, each too short to be known and scrubbed.
	if _, set := h["Range"]; set {
		return refused(abi.EgressBadRequest, "a request that carries the credential the index binds to %s (%s) may not ask for a Range", host, c.Name())
	}
	v, ok := "", false
	if k.info.Secret != nil {
		v, ok = k.info.Secret(c)
	}
	if !ok || v == "" || strings.ContainsAny(v, "\r\n\x00") {
		return refused(abi.EgressCredentialMissing, "the credential the index binds to %s (%s) is not set for this call", host, c.Name())
	}
	if c.Scheme != "" {
		v = c.Scheme + " " + v
	}
	// Scrubbed from answers: the value as sent, then the bare secret, in
	// every form redact knows.
	k.values.Add(c.Name(), v, 1)
	k.values.Add(c.Name(), strings.TrimPrefix(v, c.Scheme+" "), 1)
	h.Set(c.Header, v)
	// An answer is scrubbed as the guest would read it: a server that
	// compresses on request would hand back the credential where it is
	// not verbatim. identity asks for none (and unscrub decodes or
	// refuses what comes compressed nonetheless).
	h.Set("Accept-Encoding", "identity")
	k.attached, k.credential = http.CanonicalHeaderKey(c.Header), c.Name()
	return nil
}

// rebind sets a redirect's credential: the one attached before is
// removed (a redirect to another host never carries it), and the new
// host's own is attached, unless the guest's headers, copied onto the
// redirect, already hold a header of its name.
func (k *Call) rebind(scheme, host string, h http.Header) error {
	if k.attached != "" {
		h.Del(k.attached)
		k.attached = ""
	}
	if ans := k.attachCredential(scheme, host, h); ans != nil {
		return &refusal{ans.Error.Reason, "a redirect to " + host + ": " + ans.Error.Message}
	}
	return nil
}

// operatorAllows says whether host is an IP address in a range the
// operator lets calls reach (--network-allow): a service of the
// operator's own, where a credential may go over plain http.
func (c *Client) operatorAllows(host string) bool {
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return false
	}
	for _, p := range c.cfg.AllowAddresses {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// scrub removes the call's credential values from a response's headers
// (a server that echoes its request's headers back would hand the guest
// what it must not hold).
func (k *Call) scrub(h http.Header) http.Header {
	if k.values.Empty() {
		return h
	}
	for name, vs := range h {
		for i, v := range vs {
			vs[i] = k.values.String(v, redacted)
		}
		if clean := k.values.String(name, redacted); clean != name {
			delete(h, name)
			h[clean] = vs
		}
	}
	return h
}

// scrubBody removes the call's credential values from a response body.
func (k *Call) scrubBody(b []byte) []byte { return k.values.Replace(b, redacted) }

// scrubText removes them from a text the guest reads (an error's: Go's
// message for a malformed header line quotes it, a failed redirect names
// its Location).
func (k *Call) scrubText(s string) string { return k.values.String(s, redacted) }

// maxDecoded bounds the body a compressed response decodes to, whatever
// the per-response cap: a small body must not expand without bound.
const maxDecoded = 1 << 30

// decoded is a response body as the guest would read it, when the call
// attached a credential and the server compressed its answer though asked
// for identity: gzip and deflate are decoded (within limit, the same cap
// as the body's), and the Content-Encoding and Content-Length dropped;
// another encoding, which packd cannot look into, is refused rather than
// handed over unscrubbed, with the refusal. A call that attached no
// credential reads the body as sent.
func (k *Call) decoded(h http.Header, data []byte, limit int64) ([]byte, *abi.HTTPAnswer) {
	if k.values.Empty() {
		return data, nil
	}
	named := strings.TrimSpace(h.Get("Content-Encoding"))
	enc := strings.ToLower(named)
	if enc == "" || enc == "identity" {
		return data, nil
	}
	var r io.Reader
	switch enc {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, refused(abi.EgressFailed, "the response is gzip-encoded, but not gzip: %v", err)
		}
		zr.Multistream(true)
		r = zr
	case "deflate":
		r = flate.NewReader(bytes.NewReader(data))
		if zr, err := zlib.NewReader(bytes.NewReader(data)); err == nil {
			r = zr // RFC 9110's deflate is zlib; some servers send raw deflate
		}
	default:
		// The server names the encoding: it is scrubbed like any text of
		// its answer, and cut (an echo may put anything there).
		return nil, refused(abi.EgressFailed, "the response is %s-encoded, which packd cannot scrub of the credential it sent: ask for identity",
			k.scrubText(strconv.Quote(named[:min(len(named), 64)])))
	}
	out, err := io.ReadAll(io.LimitReader(r, min(limit, maxDecoded)+1))
	switch {
	case int64(len(out)) > limit:
		return nil, refused(abi.EgressResponseTooLarge, "the response body decodes to over the cap of %d bytes", limit)
	case err != nil:
		return nil, refused(abi.EgressFailed, "the response's %s encoding is broken: %v", enc, err)
	}
	h.Del("Content-Encoding")
	h.Del("Content-Length")
	return out, nil
}

// redacted is what a guest reads where a response held a credential.
const redacted = "[credential redacted by packd]"
