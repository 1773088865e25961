package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host/internal/egress/egresstest"
)

// names the tests resolve: api.test and *.svc.test are the loopback test
// server, internal.test a private address, meta.test the cloud metadata
// address.
var names = map[string][]netip.Addr{
	"api.test":      {netip.MustParseAddr("127.0.0.1")},
	"a.svc.test":    {netip.MustParseAddr("127.0.0.1")},
	"internal.test": {netip.MustParseAddr("10.0.0.5")},
	"meta.test":     {netip.MustParseAddr("169.254.169.254")},
	"mapped.test":   {netip.MustParseAddr("::ffff:192.168.1.1")},
}

func lookup(_ context.Context, host string) ([]netip.Addr, error) {
	if a, ok := names[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

type fixture struct {
	srv    *httptest.Server
	port   string
	client *Client
	mu     sync.Mutex
	events []Event
}

func newFixture(t *testing.T, cfg Config, tracer ...Tracer) *fixture {
	t.Helper()
	f := &fixture{}
	f.srv, f.port = egresstest.Server(t)
	if cfg.LookupHost == nil {
		cfg.LookupHost = lookup
	}
	if cfg.AllowAddresses == nil {
		cfg.AllowAddresses = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}
	obs := Observer{Request: func(ev Event) {
		f.mu.Lock()
		f.events = append(f.events, ev)
		f.mu.Unlock()
	}}
	if len(tracer) > 0 {
		obs.Tracer = tracer[0]
	}
	f.client = New(cfg, obs)
	t.Cleanup(func() { _ = f.client.Close(context.Background()) })
	return f
}

func (f *fixture) url(host, path string) string { return "http://" + host + ":" + f.port + path }

var allow = Policy{Kind: KindAllowlist, Hosts: []string{"api.test", "*.svc.test", "internal.test", "meta.test", "169.254.169.254", "mapped.test", "127.0.0.2", "::127.0.0.1", "::ffff:0:127.0.0.1"}}

func do(t *testing.T, k *Call, ctx context.Context, r abi.HTTPRequest, body string) (*abi.HTTPAnswer, string) {
	t.Helper()
	ans, b := k.Do(ctx, &r, []byte(body))
	if ans == nil {
		t.Fatal("no answer")
	}
	return ans, string(b)
}

func reason(a *abi.HTTPAnswer) string {
	if a.Error == nil {
		return fmt.Sprintf("status %d", a.Status)
	}
	return a.Error.Reason
}

func TestAllowedRequestIsSent(t *testing.T) {
	f := newFixture(t, Config{})
	k := f.client.ForCall(allow, CallInfo{Tool: "t.tool", TenantID: "acme"})
	ans, body := do(t, k, context.Background(), abi.HTTPRequest{Method: "POST", URL: f.url("api.test", "/echo"), Headers: map[string][]string{"authorization": {"s3cret"}}}, "hello")
	if ans.Error != nil || ans.Status != 200 {
		t.Fatalf("answer %+v", ans.Error)
	}
	if want := "POST hello"; body != want {
		t.Errorf("body %q, want %q", body, want)
	}
	if got := ans.Headers["X-Seen"]; len(got) != 1 || got[0] != "s3cret" {
		t.Errorf("the header did not reach the server: %v", ans.Headers)
	}
	ans, _ = do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("a.svc.test", "/echo")}, "")
	if ans.Error != nil {
		t.Errorf("a *.svc.test host: %v", ans.Error)
	}
	s := k.Summary()
	if s.Requests != 2 || s.Refused != 0 || s.BytesSent != 5 || s.BytesReceived == 0 {
		t.Errorf("summary %+v", s)
	}
	if len(f.events) != 2 || f.events[0].Host != "api.test" || f.events[0].HostClass != "allowed" || f.events[0].Status != 200 ||
		f.events[0].Tool != "t.tool" || f.events[0].TenantID != "acme" {
		t.Errorf("events %+v", f.events)
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t, Config{MaxRequests: 40}) // every refusal below counts toward it
	k := f.client.ForCall(allow, CallInfo{})
	cases := []struct{ name, url, want string }{
		{"a host not on the list", f.url("other.test", "/echo"), abi.EgressHostNotAllowed},
		{"the apex of a glob", f.url("svc.test", "/echo"), abi.EgressHostNotAllowed},
		{"a redirect to a host not on the list", f.url("api.test", "/redirect?to=") + f.url("other.test", "/echo"), abi.EgressHostNotAllowed},
		{"a redirect to the metadata address", f.url("api.test", "/redirect?to=") + "http://169.254.169.254/latest/meta-data/", abi.EgressAddressNotAllowed},
		{"a name that resolves to a private address", f.url("internal.test", "/echo"), abi.EgressAddressNotAllowed},
		{"a name that resolves to the metadata address", f.url("meta.test", "/echo"), abi.EgressAddressNotAllowed},
		{"the metadata address", "http://169.254.169.254/latest/meta-data/", abi.EgressAddressNotAllowed},
		{"an IPv4-mapped private address", f.url("mapped.test", "/echo"), abi.EgressAddressNotAllowed},
		{"loopback the operator did not allow", f.url("127.0.0.2", "/echo"), abi.EgressAddressNotAllowed},
		{"loopback in IPv4-compatible form", "http://[::127.0.0.1]:" + f.port + "/echo", abi.EgressAddressNotAllowed},
		{"loopback in SIIT's IPv4-translated form", "http://[::ffff:0:127.0.0.1]:" + f.port + "/echo", abi.EgressAddressNotAllowed},
		{"a file URL", "file:///etc/passwd", abi.EgressBadRequest},
		{"a relative URL", "/echo", abi.EgressBadRequest},
		{"a user in the URL", "http://u:p@api.test/ok", abi.EgressBadRequest},
	}
	for _, c := range cases {
		ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: c.url}, "")
		if reason(ans) != c.want {
			t.Errorf("%s: %s (%+v), want %s", c.name, reason(ans), ans.Error, c.want)
		}
	}
	for _, h := range []string{"Host", "content-length", "Transfer-Encoding", "bad name"} {
		ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("api.test", "/echo"), Headers: map[string][]string{h: {"x"}}}, "")
		if reason(ans) != abi.EgressBadRequest {
			t.Errorf("header %q: %s", h, reason(ans))
		}
	}
	ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("api.test", "/echo"), Headers: map[string][]string{"X-A": {"a\r\nX-B: b"}}}, "")
	if reason(ans) != abi.EgressBadRequest {
		t.Errorf("a header value with CRLF: %s", reason(ans))
	}
	ans, _ = do(t, k, context.Background(), abi.HTTPRequest{Method: "CONNECT", URL: f.url("api.test", "/echo")}, "")
	if reason(ans) != abi.EgressBadRequest {
		t.Errorf("CONNECT: %s", reason(ans))
	}
	for _, p := range []Policy{{}, {Kind: KindNone}, {Kind: KindUnrestricted}} {
		ans, _ := do(t, f.client.ForCall(p, CallInfo{}), context.Background(), abi.HTTPRequest{URL: f.url("api.test", "/echo")}, "")
		if reason(ans) != abi.EgressNotAllowed {
			t.Errorf("policy %+v without the operator's leave: %s", p, reason(ans))
		}
	}
}

func TestUnrestrictedStillRefusesSpecialAddresses(t *testing.T) {
	f := newFixture(t, Config{Unrestricted: true})
	k := f.client.ForCall(Policy{Kind: KindUnrestricted}, CallInfo{})
	if ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("anything.test.", "/echo")}, ""); reason(ans) != abi.EgressFailed {
		t.Errorf("an unknown name: %s", reason(ans))
	}
	if ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("api.test", "/echo")}, ""); ans.Error != nil {
		t.Errorf("allowed loopback: %v", ans.Error)
	}
	if ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("meta.test", "/echo")}, ""); reason(ans) != abi.EgressAddressNotAllowed {
		t.Errorf("metadata: %s", reason(ans))
	}
}

func TestBounds(t *testing.T) {
	// four requests: the huge one, the two bodies over the cap (refused
	// ones count), the redirect's first
	f := newFixture(t, Config{MaxRequests: 4, MaxResponseBytes: 1 << 20, MaxRequestBytes: 10})
	k := f.client.ForCall(allow, CallInfo{})
	ans, body := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("api.test", "/huge")}, "")
	if reason(ans) != abi.EgressResponseTooLarge || body != "" {
		t.Errorf("a 10 MiB response: %s, %d bytes", reason(ans), len(body))
	}
	if got := k.Summary().BytesReceived; got != 1<<20 {
		t.Errorf("received %d bytes, want the cap", got)
	}
	if ans, _ := do(t, k, context.Background(), abi.HTTPRequest{Method: "POST", URL: f.url("api.test", "/echo")}, "more than ten bytes"); reason(ans) != abi.EgressTooLarge {
		t.Errorf("a large body: %s", reason(ans))
	}
	// A body over the cap is refused before any of it is copied: the guest
	// cannot make the host hold its memory again.
	big := make([]byte, 64<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ans2, _ := k.Do(context.Background(), &abi.HTTPRequest{Method: "POST", URL: f.url("api.test", "/echo")}, big)
	runtime.ReadMemStats(&after)
	if reason(ans2) != abi.EgressTooLarge || after.TotalAlloc-before.TotalAlloc > 1<<20 {
		t.Errorf("a 64 MiB body: %s, %d bytes allocated", reason(ans2), after.TotalAlloc-before.TotalAlloc)
	}
	// the redirect counts as the second request
	if ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("api.test", "/redirect?to=/redirect?to=/ok")}, ""); reason(ans) != abi.EgressRequestLimit {
		t.Errorf("past the request cap by redirect: %s", reason(ans))
	}
	if ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("api.test", "/echo")}, ""); reason(ans) != abi.EgressRequestLimit {
		t.Errorf("past the request cap: %s", reason(ans))
	}

	// The call's deadline cuts a slow server at once.
	k = f.client.ForCall(allow, CallInfo{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	ans, _ = do(t, k, ctx, abi.HTTPRequest{URL: f.url("api.test", "/slow")}, "")
	if reason(ans) != abi.EgressFailed || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("a slow server: %s, ctx %v", reason(ans), ctx.Err())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a slow server held the call %v past its deadline", took)
	}
}

func TestCheckHost(t *testing.T) {
	for _, h := range []string{"api.example.com", "*.example.com", "localhost", "10.0.0.1", "::1", "a_b.example"} {
		if err := ValidateHost(h); err != nil {
			t.Errorf("%q: %v", h, err)
		}
	}
	for _, h := range []string{"", "*", "*.com", "https://api.example.com", "api.example.com:443", "api.example.com/x", "a.*.com", "-a.com", "a..com"} {
		if ValidateHost(h) == nil {
			t.Errorf("%q is accepted", h)
		}
	}
}

// TestTLSIsVerified: a server whose certificate the system does not trust
// (httptest's own) gets no request.
func TestTLSIsVerified(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret reached") }))
	defer srv.Close()
	f := newFixture(t, Config{})
	k := f.client.ForCall(Policy{Kind: KindAllowlist, Hosts: []string{"127.0.0.1"}}, CallInfo{})
	ans, body := do(t, k, context.Background(), abi.HTTPRequest{URL: srv.URL + "/"}, "")
	if reason(ans) != abi.EgressFailed || !strings.Contains(ans.Error.Message, "certificate") || body != "" {
		t.Errorf("an untrusted certificate: %s %+v %q", reason(ans), ans.Error, body)
	}
}

// TestRefusedRequestsCountTowardTheCap: a guest that asks again and again
// for a host it may not reach spends the call's requests like one that is
// answered (on main: 2,000 refusals and 2,000 events in one call), and
// past the cap its tries are counted, not reported one by one.
func TestRefusedRequestsCountTowardTheCap(t *testing.T) {
	f := newFixture(t, Config{MaxRequests: 3})
	k := f.client.ForCall(allow, CallInfo{})
	for i := 0; i < 100; i++ {
		ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("other.test", "/echo")}, "")
		want := abi.EgressHostNotAllowed
		if i >= 3 {
			want = abi.EgressRequestLimit
		}
		if reason(ans) != want {
			t.Fatalf("request %d: %s, want %s", i, reason(ans), want)
		}
	}
	f.mu.Lock()
	events := len(f.events)
	f.mu.Unlock()
	if s := k.Summary(); s.Refused != 100 || s.Requests != 0 || events != 4 {
		t.Fatalf("summary %+v, %d events, want 100 refused, none sent, 4 events", s, events)
	}
	if ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("api.test", "/ok")}, ""); reason(ans) != abi.EgressRequestLimit {
		t.Fatalf("an allowed request past the cap: %s", reason(ans))
	}
}

// spans is a Tracer that keeps what it was told.
type spans struct {
	mu      sync.Mutex
	started []string // method host, and the parent's value
	ended   []Event
}

type parentKey struct{}

func (s *spans) Start(parent context.Context, method, host string, h http.Header) func(Event) {
	s.mu.Lock()
	s.started = append(s.started, fmt.Sprintf("%s %s %v", method, host, parent.Value(parentKey{})))
	s.mu.Unlock()
	h.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.Del("Tracestate")
	return func(ev Event) {
		s.mu.Lock()
		s.ended = append(s.ended, ev)
		s.mu.Unlock()
	}
}

// TestTracerSpansEveryRequestSent: a request sent opens a span whose
// parent is the call's context, carries the span's traceparent over the
// guest's own (and none of its tracestate), and closes it with how it
// ended; a request refused before it is sent opens none.
func TestTracerSpansEveryRequestSent(t *testing.T) {
	tr := &spans{}
	f := newFixture(t, Config{}, tr)
	call := context.WithValue(context.Background(), parentKey{}, "the call's span")
	k := f.client.ForCall(allow, CallInfo{Tool: "t.tool", Context: call})
	ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("api.test", "/echo"),
		Headers: map[string][]string{"traceparent": {"00-forged0000000000000000000000000-0000000000000001-01"}, "tracestate": {"guest=1"}}}, "")
	if got := ans.Headers["X-Seen-Trace"]; ans.Error != nil || len(got) != 1 || got[0] != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Fatalf("the server saw traceparent and tracestate %v (%+v)", got, ans.Error)
	}
	if ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("elsewhere.test", "/echo")}, ""); reason(ans) != abi.EgressHostNotAllowed {
		t.Fatalf("a host off the allowlist: %s", reason(ans))
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.started) != 1 || tr.started[0] != "GET api.test the call's span" || len(tr.ended) != 1 || tr.ended[0].Status != 200 || tr.ended[0].BytesReceived == 0 {
		t.Fatalf("spans started %q, ended %+v", tr.started, tr.ended)
	}
}

// TestReadOnlySendsOnlySafeMethods: a read-only policy (mutating: false)
// sends GET, HEAD and OPTIONS; any other method, a body, or a request
// asking the server for another method (X-HTTP-Method-Override, _method)
// is refused read-only before anything is sent, and counted.
func TestReadOnlySendsOnlySafeMethods(t *testing.T) {
	f := newFixture(t, Config{})
	ro := allow
	ro.ReadOnly = true
	k := f.client.ForCall(ro, CallInfo{})
	for _, m := range []string{"GET", "HEAD", "OPTIONS"} {
		if ans, _ := do(t, k, context.Background(), abi.HTTPRequest{Method: m, URL: f.url("api.test", "/echo")}, ""); ans.Error != nil {
			t.Errorf("%s from a read-only tool: %s", m, reason(ans))
		}
	}
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		if ans, _ := do(t, k, context.Background(), abi.HTTPRequest{Method: m, URL: f.url("api.test", "/echo")}, "x"); reason(ans) != abi.EgressReadOnly {
			t.Errorf("%s from a read-only tool: %s", m, reason(ans))
		}
	}
	// a safe method that would write nonetheless (on main all three were sent)
	for _, r := range []struct {
		req  abi.HTTPRequest
		body string
	}{
		{abi.HTTPRequest{Method: "GET", URL: f.url("api.test", "/echo")}, "a body"},
		{abi.HTTPRequest{Method: "GET", URL: f.url("api.test", "/echo"), Headers: map[string][]string{"x-http-method-override": {"DELETE"}}}, ""},
		{abi.HTTPRequest{Method: "GET", URL: f.url("api.test", "/echo?_method=DELETE")}, ""},
	} {
		if ans, _ := do(t, k, context.Background(), r.req, r.body); reason(ans) != abi.EgressReadOnly {
			t.Errorf("%+v with %q from a read-only tool: %s", r.req, r.body, reason(ans))
		}
	}
	if s := k.Summary(); s.Requests != 3 || s.Refused != 7 || s.BytesSent != 0 {
		t.Errorf("summary %+v", s)
	}
}

// TestWritesCarryIdempotencyKeys: a write (not GET, HEAD or OPTIONS) of a
// call with an idempotency key carries a key derived from it and the
// request's ordinal: the same for the same call run again, different for
// every other request and call; none on reads, none without a call key,
// the guest's own kept, renamed or off by host.
func TestWritesCarryIdempotencyKeys(t *testing.T) {
	f := newFixture(t, Config{})
	pol := allow
	pol.Idempotency = map[string]string{"a.svc.test": "X-Request-Key", "internal.test": ""}
	seen := func(k *Call, method, host string, headers map[string][]string) string {
		t.Helper()
		r := abi.HTTPRequest{Method: method, URL: f.url(host, "/headers"), Headers: headers}
		ans, body := do(t, k, context.Background(), r, "x")
		if ans.Error != nil {
			t.Fatalf("%s %s: %s", method, host, reason(ans))
		}
		return body
	}
	run := func() []string {
		k := f.client.ForCall(pol, CallInfo{IdempotencyKey: "5f0c2a5e-0000-5000-8000-000000000001"})
		return []string{seen(k, "POST", "api.test", nil), seen(k, "GET", "api.test", nil), seen(k, "PUT", "api.test", nil),
			seen(k, "DELETE", "a.svc.test", nil), seen(k, "PATCH", "api.test", map[string][]string{"idempotency-key": {"guest-own"}})}
	}
	first, again := run(), run()
	if !slices.Equal(first, again) {
		t.Fatalf("the same call run twice sent other keys:\n%q\n%q", first, again)
	}
	post, put := IdempotencyKey("5f0c2a5e-0000-5000-8000-000000000001", 1), IdempotencyKey("5f0c2a5e-0000-5000-8000-000000000001", 3)
	want := []string{"Idempotency-Key=" + post, "", "Idempotency-Key=" + put, "X-Request-Key=" + IdempotencyKey("5f0c2a5e-0000-5000-8000-000000000001", 4), "Idempotency-Key=guest-own"}
	if !slices.Equal(first, want) || post == put {
		t.Fatalf("keys sent:\n%q\nwant\n%q", first, want)
	}
	// as Python's uuid.uuid5(UUID("3b6e2f51-8c0d-4e7a-9b15-62d4a83f90c7"), "5f0c…0001/1") has it
	if post != "6a30d962-2af5-5aa4-805a-d0ec867b711c" {
		t.Errorf("the key of request 1 is %s, not the RFC 9562 version 5 UUID of its name", post)
	}
	if got := seen(f.client.ForCall(pol, CallInfo{}), "POST", "api.test", nil); got != "" {
		t.Errorf("a call without an idempotency key sent %q", got)
	}
}

// TestCredentialsGoOnlyWhereBound: a bound credential is written into the
// requests to its host only (a redirect elsewhere drops it, one back to
// its host gets it again), goes over plain http only to an address the
// operator allows, is scrubbed from what the guest reads back, is
// refused as a guest header of its name, and a call without its secret is
// refused rather than sent without it.
func TestCredentialsGoOnlyWhereBound(t *testing.T) {
	f := newFixture(t, Config{})
	pol := allow
	pol.Hosts = append(slices.Clone(pol.Hosts), "127.0.0.1")
	pol.Credentials = map[string]Credential{"127.0.0.1": {Secret: "tok", Header: "Authorization", Scheme: "Bearer"},
		"a.svc.test": {Secret: "tok", Header: "Authorization", Scheme: "Bearer"}}
	secrets := func(c Credential) (string, bool) {
		return map[string]string{"tok": "T0KEN-1234"}[c.Secret], c.Secret == "tok"
	}
	k := f.client.ForCall(pol, CallInfo{Secret: secrets})
	headers := func(url string) string {
		t.Helper()
		ans, body := do(t, k, context.Background(), abi.HTTPRequest{URL: url}, "")
		if ans.Error != nil {
			t.Fatalf("%s: %s %s", url, reason(ans), ans.Error.Message)
		}
		return body
	}
	if got := headers(f.url("127.0.0.1", "/headers")); got != "Authorization=[credential redacted by packd]" {
		t.Errorf("the bound host's echo of its headers reached the guest as %q", got)
	}
	if got := headers(f.url("127.0.0.1", "/redirect?to=") + f.url("api.test", "/headers")); got != "" {
		t.Errorf("a redirect to an unbound host carried %q", got)
	}
	if got := headers(f.url("api.test", "/redirect?to=") + f.url("127.0.0.1", "/headers")); got != "Authorization=[credential redacted by packd]" {
		t.Errorf("a redirect to the bound host carried %q", got)
	}
	ans, _ := do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("127.0.0.1", "/headers"), Headers: map[string][]string{"authorization": {"Bearer mine"}}}, "")
	if reason(ans) != abi.EgressBadRequest {
		t.Errorf("a guest's own Authorization to the bound host: %s", reason(ans))
	}
	ans, _ = do(t, f.client.ForCall(pol, CallInfo{}), context.Background(), abi.HTTPRequest{URL: f.url("127.0.0.1", "/headers")}, "")
	if reason(ans) != abi.EgressCredentialMissing {
		t.Errorf("a call without the secret: %s", reason(ans))
	}
	// A name (not an address the operator allows) gets it over https only.
	ans, _ = do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("a.svc.test", "/headers")}, "")
	if reason(ans) != abi.EgressCredentialNeedsHTTPS {
		t.Errorf("a credential over plain http to a name: %s", reason(ans))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var creds []string
	for _, ev := range f.events {
		creds = append(creds, ev.Credential)
	}
	// each request with the credential on one of its hops says so; the
	// refused ones, sent nowhere, do not
	if want := []string{"secret tok", "secret tok", "secret tok", "", "", ""}; !slices.Equal(creds, want) {
		t.Errorf("events say credentials %q, want %q", creds, want)
	}
}

// TestACredentialNeverComesBackDisguised: a server that echoes the
// request's credential hands the guest none of it, however it echoes it:
// gzip-compressed on the guest's Accept-Encoding (packd asks for identity
// instead), compressed anyway (packd decodes before it scrubs), in an
// encoding packd cannot read (refused), JSON- or URL-escaped, in Go's
// error text for a malformed header line or an unparsable Location; and a
// credentialed request asks for no byte range of what it echoes.
func TestACredentialNeverComesBackDisguised(t *testing.T) {
	f := newFixture(t, Config{})
	pol := allow
	pol.Hosts = append(slices.Clone(pol.Hosts), "127.0.0.1")
	const token = "T0K/EN+12<34>&"
	pol.Credentials = map[string]Credential{"127.0.0.1": {Secret: "tok", Header: "Authorization", Scheme: "Bearer"}}
	k := f.client.ForCall(pol, CallInfo{Secret: func(c Credential) (string, bool) { return token, true }})
	get := func(path string, headers map[string][]string) (*abi.HTTPAnswer, string) {
		t.Helper()
		return do(t, k, context.Background(), abi.HTTPRequest{URL: f.url("127.0.0.1", path), Headers: headers}, "")
	}
	leaks := func(s string) bool {
		for _, form := range []string{"T0K", "T0K%2FEN", "EN+12", "EN%2B12", `\u003c`} {
			if strings.Contains(s, form) {
				return true
			}
		}
		return false
	}
	gz := map[string][]string{"Accept-Encoding": {"gzip"}}
	for _, c := range []struct {
		name, path string
		headers    map[string][]string
		want       string // the body, or the refusal's reason
	}{
		{"gzip asked for", "/zheaders", gz, "Authorization=[credential redacted by packd]"},
		{"gzip forced", "/zheaders?force=gzip", gz, "Authorization=[credential redacted by packd]"},
		{"brotli forced", "/zheaders?enc=br", gz, abi.EgressFailed},
		{"an encoding named after it", "/zheaders?enc=echo", gz, abi.EgressFailed},
		{"a malformed header line", "/badline", nil, abi.EgressFailed},
		{"an unparsable Location", "/badlocation", nil, abi.EgressFailed},
		{"a range of it", "/headers", map[string][]string{"Range": {"bytes=14-16"}}, abi.EgressBadRequest},
	} {
		ans, body := get(c.path, c.headers)
		got := body
		if ans.Error != nil {
			got = ans.Error.Reason
			if leaks(ans.Error.Message) {
				t.Errorf("%s: the error text holds the credential: %q", c.name, ans.Error.Message)
			}
		}
		if got != c.want || leaks(body) || leaks(fmt.Sprint(ans.Headers)) {
			t.Errorf("%s: %q %v, want %q", c.name, got, ans.Headers, c.want)
		}
		if ans.Error == nil && ans.Headers["Content-Encoding"] != nil {
			t.Errorf("%s: the guest is told the body it reads is %v", c.name, ans.Headers["Content-Encoding"])
		}
	}
	// Every escaped form of it, as an echo in JSON or a query would give.
	k.values.Add("x", token, 1)
	for _, echoed := range []string{`"T0K/EN+12\u003c34\u003e\u0026"`, "T0K%2FEN%2B12%3C34%3E%26", "Bearer+T0K%2FEN%2B12%3C34%3E%26", "T0K%2FEN+12%3C34%3E&"} {
		if got := string(k.scrubBody([]byte(echoed))); leaks(got) {
			t.Errorf("%s scrubbed is %s", echoed, got)
		}
	}
}
