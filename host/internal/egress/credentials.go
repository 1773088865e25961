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
	"net/http"
	"net/netip"
	"slices"
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
	// Scrubbed from answers: the value as sent, then the bare secret.
	for _, s := range []string{v, strings.TrimPrefix(v, c.Scheme+" ")} {
		if !slices.Contains(k.values, s) {
			k.values = append(k.values, s)
		}
	}
	h.Set(c.Header, v)
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
	if len(k.values) == 0 {
		return h
	}
	for _, vs := range h {
		for i, v := range vs {
			for _, secret := range k.values {
				v = strings.ReplaceAll(v, secret, redacted)
			}
			vs[i] = v
		}
	}
	return h
}

// scrubBody removes the call's credential values from a response body.
func (k *Call) scrubBody(b []byte) []byte {
	for _, secret := range k.values {
		if bytes.Contains(b, []byte(secret)) {
			b = bytes.ReplaceAll(b, []byte(secret), []byte(redacted))
		}
	}
	return b
}

// redacted is what a guest reads where a response held a credential.
const redacted = "[credential redacted by packd]"
