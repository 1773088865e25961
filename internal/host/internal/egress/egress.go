// Package egress sends pack code's outbound HTTP requests under the
// index's network policy (docs/index-format.md, "network"): only to the
// hosts a tool may reach, only to public addresses unless the operator
// allows more, checked after DNS resolution on the address actually
// dialled and again on every redirect, and bounded per call in requests,
// bytes and time (the call's deadline).
package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/redact"
)

// Kinds of network policy (Policy.Kind), as kindgi's tool schema names them.
const (
	KindNone         = "none"
	KindAllowlist    = "allowlist"
	KindUnrestricted = "unrestricted"
)

// Policy is what one tool may reach: nothing (KindNone, also the zero
// value), the hosts of an allowlist, or any public host (KindUnrestricted).
type Policy struct {
	Kind  string
	Hosts []string // KindAllowlist: exact names, IP literals or "*." suffix globs, lower case
	// HostsFromEnv: variables ("${env.NAME}") whose hosts host adds to Hosts at load.
	HostsFromEnv []string
	// ReadOnly (a tool whose index entry says mutating: false) sends only
	// safe methods: GET, HEAD and OPTIONS.
	ReadOnly bool
	// Idempotency renames, by host pattern (as Hosts), the header a write
	// carries its idempotency key in; "" sends none to those hosts.
	Idempotency map[string]string
	// Credentials, by host pattern (as Hosts), is what packd writes into
	// every request to those hosts itself (credentials.go).
	Credentials map[string]Credential
}

// Allows reports whether the policy lets a request go to host (a URL's
// host name, without port).
func (p Policy) Allows(host string) bool {
	switch p.Kind {
	case KindUnrestricted:
		return true
	case KindAllowlist:
		for _, h := range p.Hosts {
			if matches(h, host) {
				return true
			}
		}
	}
	return false
}

// byHost is the value m holds for host: under its exact name, else under
// the longest "*." pattern that matches it.
func byHost[V any](m map[string]V, host string) (V, bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if v, ok := m[host]; ok {
		return v, true
	}
	var best V
	found, longest := false, 0
	for pattern, v := range m {
		if strings.HasPrefix(pattern, "*") && len(pattern) > longest && matches(pattern, host) {
			best, found, longest = v, true, len(pattern)
		}
	}
	return best, found
}

// matches reports whether a host (a URL's host name) is pattern: an exact
// name or IP literal, or a "*." glob of the names under a suffix.
func matches(pattern, host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if suffix, glob := strings.CutPrefix(pattern, "*"); glob {
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return host == pattern
}

// ValidateHost says what is wrong with an allowlist entry, if anything: a DNS
// name or IP literal, or "*." and a name of at least two labels; no
// scheme, port, path or wildcard elsewhere.
func ValidateHost(h string) error {
	name, glob := strings.CutPrefix(h, "*.")
	if ip, err := netip.ParseAddr(name); err == nil && !glob && ip.Zone() == "" {
		return nil
	}
	if name == "" || len(name) > 253 || (glob && !strings.Contains(name, ".")) {
		return errors.New("is not a host name")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return errors.New("is not a host name")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return errors.New("is not a host name (a name, an IP address or \"*.\" and a name; no scheme, port or path)")
			}
		}
	}
	return nil
}

// Defaults for a zero Config.
const (
	DefaultMaxRequests      = 32
	DefaultMaxRequestBytes  = 1 << 20
	DefaultMaxResponseBytes = 4 << 20
	DefaultMaxReceivedBytes = 16 << 20
	maxRedirects            = 10
)

// Config is what the operator decides for every call.
type Config struct {
	// Unrestricted lets a tool whose policy is KindUnrestricted reach any
	// public host; without it, loading such a pack is a problem.
	Unrestricted bool
	// AllowAddresses are special address ranges (loopback, private,
	// link-local, …) calls may reach nonetheless, e.g. 10.0.0.0/8 for a
	// service inside the cluster, 127.0.0.1/32 for tests.
	AllowAddresses []netip.Prefix
	// Per call: requests (redirects count), bytes of one request's body,
	// bytes of one response's body, bytes of every response body together.
	MaxRequests                                         int
	MaxRequestBytes, MaxResponseBytes, MaxReceivedBytes int64
	// LookupHost resolves a name (default net.DefaultResolver); tests
	// point names at addresses with it.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Observer is who is told of the requests (host.Observer's part).
type Observer struct {
	// Request, if set, is told about every request a call made or was
	// refused (for metrics and the audit log); it must not block.
	Request func(Event)
	// Tracer, if set, opens a span for every request a call sends.
	Tracer Tracer
}

// Tracer opens the span of one request a call sends, a child of the
// call's span (in parent, CallInfo.Context), and writes the span's trace
// context into the request's header h (traceparent, over any a guest
// set). end closes the span with how the request ended. It must not
// block.
type Tracer interface {
	Start(parent context.Context, method, host string, h http.Header) (end func(Event))
}

// Event is one outbound request of a call. It never holds a body, a
// header or a query: only where it went and how it ended.
type Event struct {
	Tool, TenantID string
	Host           string // the URL's host name
	// HostClass is "public", "allowed" (a special address the operator
	// allows) or "" when nothing was dialled.
	HostClass                string
	Status                   int    // the response's status, 0 when there was none
	Reason                   string // why there was none (abi.Egress*), "" with a status
	BytesSent, BytesReceived int64
	Duration                 time.Duration
	// Credential names the credential packd attached ("secret NAME" or
	// "env NAME"); never its value.
	Credential string
}

// Summary is what a call did on the network, for its record.
type Summary struct {
	Requests, Refused        int
	BytesSent, BytesReceived int64
}

// Client sends the requests of every call of a pack. It is safe for
// concurrent use; Close closes its idle connections.
type Client struct {
	cfg       Config
	obs       Observer
	transport *http.Transport
}

// New makes a client: one connection pool for the pack, no proxy (a proxy
// would dial for us, past the address check), TLS verified against the
// system's roots; obs is told of its requests.
func New(cfg Config, obs Observer) *Client {
	orDefault(&cfg.MaxRequests, DefaultMaxRequests)
	orDefault(&cfg.MaxRequestBytes, DefaultMaxRequestBytes)
	orDefault(&cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	orDefault(&cfg.MaxReceivedBytes, DefaultMaxReceivedBytes)
	cfg.MaxResponseBytes = min(cfg.MaxResponseBytes, 1<<30) // its length crosses the ABI in 32 bits
	if cfg.LookupHost == nil {
		cfg.LookupHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	c := &Client{cfg: cfg, obs: obs}
	c.transport = &http.Transport{
		Proxy:                  nil,
		DialContext:            c.dial,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		DisableCompression:     true, // bodies as the server sent them, counted as sent
		MaxResponseHeaderBytes: 64 << 10,
	}
	return c
}

func orDefault[T int | int64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Close closes the client's idle connections. Safe twice.
func (c *Client) Close(context.Context) error {
	c.transport.CloseIdleConnections()
	return nil
}

// Unrestricted reports whether the operator allows KindUnrestricted.
func (c *Client) Unrestricted() bool { return c.cfg.Unrestricted }

// CallInfo says whose call a Call serves, for events.
type CallInfo struct {
	Tool, TenantID string
	// IdempotencyKey is the call's ctx.idempotencyKey ("": none, and its
	// writes carry no key).
	IdempotencyKey string
	// Secret gives the value of a credential of the policy for this call
	// (false: it has none).
	Secret func(Credential) (string, bool)
	// Context is the call's (its values only: a span, for Tracer).
	Context context.Context
}

// Call sends one call's requests under one policy. It is used by one
// goroutine at a time (the guest's).
type Call struct {
	c      *Client
	policy Policy
	info   CallInfo
	sum    Summary
	client http.Client
	// made counts every request the call asked for, refused or sent, and
	// every redirect followed: the per-call cap is on made. overCap is set
	// once a request was refused for the cap: the refusals after it are
	// counted but not reported one by one.
	made    int
	overCap bool
	// spanEnd closes the span of the request being sent (Tracer).
	spanEnd func(Event)
	// attached is the credential header of the request being sent, and
	// the values of every credential this call attached, which no answer
	// hands the guest (credentials.go).
	attached string
	values   redact.Set
	// credential names the credential attached to any hop of the request
	// being sent, for its event.
	credential string
}

// ForCall is what sends a call's requests under policy.
func (c *Client) ForCall(policy Policy, info CallInfo) *Call {
	k := &Call{c: c, policy: policy, info: info}
	k.client = http.Client{Transport: c.transport, CheckRedirect: k.redirect}
	return k
}

// Summary is what the call did on the network so far.
func (k *Call) Summary() Summary { return k.sum }

// methods are the methods a guest may send.
var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true}

// hopHeaders are the headers packd's transport writes itself.
var hopHeaders = map[string]bool{"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Keep-Alive": true, "Upgrade": true, "Te": true, "Trailer": true, "Proxy-Connection": true, "Proxy-Authorization": true}

// Do sends one request (sandbox.Egress). body may be the guest's memory:
// Do copies it once its length is checked.
func (k *Call) Do(ctx context.Context, r *abi.HTTPRequest, body []byte) (*abi.HTTPAnswer, []byte) {
	if k.made >= k.c.cfg.MaxRequests {
		k.sum.Refused++
		ans := refused(abi.EgressRequestLimit, "a call may make %d requests, refused ones and redirects included", k.c.cfg.MaxRequests)
		if k.overCap { // said once: a guest looping past the cap writes no event per try
			return ans, nil
		}
		k.overCap = true
		k.report(Event{Tool: k.info.Tool, TenantID: k.info.TenantID, Reason: abi.EgressRequestLimit})
		return ans, nil
	}
	k.made++
	start := time.Now()
	ev := Event{Tool: k.info.Tool, TenantID: k.info.TenantID}
	k.credential = ""
	ans, resp := k.do(ctx, r, body, &ev)
	ev.Duration, ev.Credential = time.Since(start), k.credential
	if ans.Error != nil {
		ev.Reason = ans.Error.Reason
		k.sum.Refused++
	} else {
		ev.Status = ans.Status
	}
	k.sum.BytesSent += ev.BytesSent
	k.sum.BytesReceived += ev.BytesReceived
	if k.spanEnd != nil {
		k.spanEnd(ev)
		k.spanEnd = nil
	}
	k.report(ev)
	return ans, resp
}

// report hands an event to the client's Observer.Request.
func (k *Call) report(ev Event) {
	if k.c.obs.Request != nil {
		k.c.obs.Request(ev)
	}
}

func refused(reason, format string, args ...any) *abi.HTTPAnswer {
	return &abi.HTTPAnswer{Error: &abi.HTTPError{Reason: reason, Message: fmt.Sprintf(format, args...)}}
}

func (k *Call) do(ctx context.Context, r *abi.HTTPRequest, body []byte, ev *Event) (*abi.HTTPAnswer, []byte) {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	u, err := url.Parse(r.URL)
	switch {
	case err != nil || u.Host == "" || u.Hostname() == "":
		return refused(abi.EgressBadRequest, "%q is not an absolute URL", r.URL), nil
	case u.Scheme != "http" && u.Scheme != "https":
		return refused(abi.EgressBadRequest, "scheme %q: packd sends http and https only", u.Scheme), nil
	case u.User != nil:
		return refused(abi.EgressBadRequest, "a URL may not hold a user or password: send an Authorization header"), nil
	case !methods[method]:
		return refused(abi.EgressBadRequest, "method %q is not one packd sends", method), nil
	}
	ev.Host = strings.ToLower(u.Hostname())
	if k.policy.Kind == KindNone || k.policy.Kind == "" {
		return refused(abi.EgressNotAllowed, "the index allows this tool no network"), nil
	}
	if k.policy.Kind == KindUnrestricted && !k.c.cfg.Unrestricted {
		return refused(abi.EgressNotAllowed, "the operator does not allow unrestricted network"), nil
	}
	if !k.policy.Allows(ev.Host) {
		return refused(abi.EgressHostNotAllowed, "%s is not on this tool's allowlist", ev.Host), nil
	}
	if k.policy.ReadOnly {
		if ans := readOnly(method, u, r.Headers, body); ans != nil {
			return ans, nil
		}
	}
	if int64(len(body)) > k.c.cfg.MaxRequestBytes {
		return refused(abi.EgressTooLarge, "the request body of %d bytes is over the cap of %d", len(body), k.c.cfg.MaxRequestBytes), nil
	}
	// body is the guest's memory: the transport may still read the body
	// after Do returns (a server that answers before reading it all).
	body = bytes.Clone(body)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return refused(abi.EgressBadRequest, "%v", err), nil
	}
	for name, values := range r.Headers {
		canon := http.CanonicalHeaderKey(name)
		if hopHeaders[canon] || !validName(name) {
			return refused(abi.EgressBadRequest, "header %q is not one a guest may set", name), nil
		}
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n\x00") {
				return refused(abi.EgressBadRequest, "header %q has a value with a line break or NUL", name), nil
			}
			req.Header.Add(canon, v)
		}
	}
	if len(body) == 0 {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if ans := k.attachCredential(u.Scheme, ev.Host, req.Header); ans != nil {
		return ans, nil
	}
	k.addIdempotencyKey(method, ev.Host, req.Header)
	if t := k.c.obs.Tracer; t != nil {
		parent := k.info.Context
		if parent == nil {
			parent = context.Background()
		}
		k.spanEnd = t.Start(parent, method, ev.Host, req.Header)
	}
	var remote net.Addr
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { remote = info.Conn.RemoteAddr() },
	}))
	k.sum.Requests++
	ev.BytesSent = int64(len(body))
	res, err := k.client.Do(req)
	if remote != nil {
		ev.HostClass = "public"
		if ap, perr := netip.ParseAddrPort(remote.String()); perr == nil && special(ap.Addr().Unmap()) != "" {
			ev.HostClass = "allowed"
		}
	}
	if err != nil {
		return k.failure(err)
	}
	defer res.Body.Close()
	limit := min(k.c.cfg.MaxResponseBytes, k.c.cfg.MaxReceivedBytes-k.sum.BytesReceived)
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	ev.BytesReceived = int64(len(data))
	switch {
	case int64(len(data)) > limit:
		ev.BytesReceived = limit
		return refused(abi.EgressResponseTooLarge, "the response body is over the cap of %d bytes (%d per response, %d per call)",
			limit, k.c.cfg.MaxResponseBytes, k.c.cfg.MaxReceivedBytes), nil
	case err != nil:
		return k.failure(err)
	}
	data, ans := k.decoded(res.Header, data, limit)
	if ans != nil {
		return ans, nil
	}
	return &abi.HTTPAnswer{Status: res.StatusCode, Headers: k.scrub(res.Header)}, k.scrubBody(data)
}

// failure turns a failed exchange into its answer, its text scrubbed of
// the call's credentials.
func (k *Call) failure(err error) (*abi.HTTPAnswer, []byte) {
	var r *refusal
	if errors.As(err, &r) {
		return refused(r.reason, "%s", k.scrubText(r.message)), nil
	}
	return refused(abi.EgressFailed, "%s", k.scrubText(strings.TrimPrefix(err.Error(), "Get "))), nil
}

// redirect checks a redirect as a new request: its host against the
// policy (the dial checks its address), and the call's request count.
func (k *Call) redirect(req *http.Request, via []*http.Request) error {
	host := strings.ToLower(req.URL.Hostname())
	switch {
	case len(via) >= maxRedirects:
		return &refusal{abi.EgressRedirect, fmt.Sprintf("stopped after %d redirects", maxRedirects)}
	case req.URL.Scheme != "http" && req.URL.Scheme != "https":
		return &refusal{abi.EgressBadRequest, fmt.Sprintf("a redirect to scheme %q", req.URL.Scheme)}
	case !k.policy.Allows(host):
		return &refusal{abi.EgressHostNotAllowed, fmt.Sprintf("a redirect to %s, which is not on this tool's allowlist", host)}
	case k.made >= k.c.cfg.MaxRequests:
		return &refusal{abi.EgressRequestLimit, fmt.Sprintf("a call may make %d requests (redirects count)", k.c.cfg.MaxRequests)}
	}
	if err := k.rebind(req.URL.Scheme, host, req.Header); err != nil {
		return err
	}
	k.made++
	k.sum.Requests++
	return nil
}

// ValidHeaderName says whether packd may write a header of this name on
// a request: a token (RFC 9110), not one of the headers packd's transport
// writes itself.
func ValidHeaderName(name string) bool {
	return name != "" && validName(name) && !hopHeaders[http.CanonicalHeaderKey(name)]
}

// ValidToken says whether s is an HTTP token (RFC 9110), as a header's
// name or an authorization scheme is.
func ValidToken(s string) bool { return validName(s) }

// validName reports whether a header name is an HTTP token.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
