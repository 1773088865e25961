package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/host/internal/egress/egresstest"
	"github.com/kindgi/packd/internal/sandbox"
)

// netPack serves testdata/gonet (a Go pack using net/http through
// abi/guest/egress) next to a loopback HTTP server: net.fetch may reach
// api.test (the server), internal.test (a private address), meta.test and
// 169.254.169.254 (the cloud metadata address); net.offline has no
// network. The operator allows the loopback address of the server only.
type netPack struct {
	pack   *host.Pack
	port   string
	mu     sync.Mutex
	events []host.EgressEvent
}

// netModules are the same pack in Go (net/http through abi/guest/egress)
// and in C (sdk/c/kindgi.h's kindgi_http).
var netModules = []string{"gonet/gonet.wasm", "cnet/cnet.wasm"}

func gonetWasm(t testing.TB) []byte { return netWasm(t, netModules[0]) }

func netWasm(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	if err != nil {
		t.Fatalf("%v (make builds testdata/%s)", err, name)
	}
	return b
}

func newNetPack(t *testing.T, network host.NetworkConfig, module string) *netPack {
	t.Helper()
	np := &netPack{}
	_, np.port = egresstest.Server(t)
	resolve := map[string]string{"api.test": "127.0.0.1", "internal.test": "10.1.2.3", "meta.test": "169.254.169.254"}
	network.LookupHost = func(_ context.Context, name string) ([]netip.Addr, error) {
		if a, ok := resolve[name]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return nil, fmt.Errorf("no such host %s", name)
	}
	if network.AllowAddresses == nil {
		network.AllowAddresses = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}
	observe := host.Observer{EgressRequest: func(ev host.EgressEvent) {
		np.mu.Lock()
		np.events = append(np.events, ev)
		np.mu.Unlock()
	}}
	schema := `"input":{"type":"object"},"output":{"type":"object"},"modulePath":"gonet.wasm"`
	index := indexJSON(`{"id":"net.fetch",`+schema+`,"network":{"kind":"allowlist","hosts":["api.test","internal.test","meta.test","169.254.169.254"]}},`+
		`{"id":"net.offline",`+schema+`,"network":{"kind":"none"}}`, "")
	path := writePack(t, index, map[string][]byte{"gonet.wasm": netWasm(t, module)})
	p, err := host.Load(context.Background(), host.Config{IndexPath: path, Sandbox: sandbox.Config{CacheDir: cacheDir, PoolSize: 2}, Network: network, Observe: observe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	np.pack = p
	return np
}

func (np *netPack) url(host, path string) string { return "http://" + host + ":" + np.port + path }

// fetch calls a tool of the pack with input and a timeout, and returns
// the outcome and the tool's output (nil on an error).
func (np *netPack) fetch(t *testing.T, tool string, input map[string]any, timeout time.Duration) (*host.Outcome, map[string]any) {
	t.Helper()
	in, _ := json.Marshal(input)
	body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":%q},"input":%s,"ctx":{"tenantId":"acme","runId":"r","secrets":{"apiToken":"tok-123"}}}`, tool, in)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	o := np.pack.Dispatch(ctx, host.Request{Body: []byte(body), Timeout: timeout})
	var m struct {
		Output map[string]any `json:"output"`
	}
	_ = json.Unmarshal(o.Response, &m)
	return o, m.Output
}

func TestPackCodeReachesOnlyWhatItsPolicyAllows(t *testing.T) {
	for _, module := range netModules {
		t.Run(filepath.Dir(module), func(t *testing.T) { reachesOnlyWhatItsPolicyAllows(t, module) })
	}
}

func reachesOnlyWhatItsPolicyAllows(t *testing.T, module string) {
	np := newNetPack(t, host.NetworkConfig{}, module)
	o, out := np.fetch(t, "net.fetch", map[string]any{"url": np.url("api.test", "/echo"), "method": "POST", "body": "hi"}, time.Minute)
	if out == nil || out["status"] != 200.0 || out["body"] != "POST hi" || out["seen"] != "Bearer tok-123" {
		t.Fatalf("an allowed request: %s", o.Response)
	}
	if e := o.Usage.Egress; e.Requests != 1 || e.Refused != 0 || e.BytesSent != 2 || e.BytesReceived != 7 {
		t.Errorf("usage %+v", e)
	}
	refusals := []struct{ name, tool, url, reason string }{
		{"a host not on the list", "net.fetch", np.url("other.test", "/echo"), "host-not-allowed"},
		{"a redirect to a host not on the list", "net.fetch", np.url("api.test", "/redirect?to=") + np.url("other.test", "/echo"), "host-not-allowed"},
		{"a name that resolves to a private address", "net.fetch", np.url("internal.test", "/echo"), "address-not-allowed"},
		{"a name that resolves to the metadata address", "net.fetch", np.url("meta.test", "/echo"), "address-not-allowed"},
		{"the metadata address", "net.fetch", "http://169.254.169.254/latest/meta-data/", "address-not-allowed"},
		{"a redirect to the metadata address", "net.fetch", np.url("api.test", "/redirect?to=http://169.254.169.254/"), "address-not-allowed"},
		{"a huge response", "net.fetch", np.url("api.test", "/huge"), "response-too-large"},
		{"a tool without network", "net.offline", np.url("api.test", "/echo"), "network-not-allowed"},
	}
	for _, c := range refusals {
		o, out := np.fetch(t, c.tool, map[string]any{"url": c.url}, time.Minute)
		if out == nil || out["reason"] != c.reason {
			t.Errorf("%s: %s, want reason %s", c.name, o.Response, c.reason)
			continue
		}
		if o.Usage.Egress.Refused != 1 {
			t.Errorf("%s: usage %+v", c.name, o.Usage.Egress)
		}
	}
	np.mu.Lock()
	defer np.mu.Unlock()
	if len(np.events) != 1+len(refusals) {
		t.Fatalf("%d events", len(np.events))
	}
	if ev := np.events[0]; ev.Tool != "net.fetch" || ev.TenantID != "acme" || ev.Host != "api.test" || ev.Status != 200 || ev.HostClass != "allowed" {
		t.Errorf("event %+v", ev)
	}
}

func TestSlowServerIsCutAtTheCallsDeadline(t *testing.T) {
	np := newNetPack(t, host.NetworkConfig{}, netModules[1])
	start := time.Now()
	o, _ := np.fetch(t, "net.fetch", map[string]any{"url": np.url("api.test", "/slow")}, 500*time.Millisecond)
	if o.Code != "deadline-exceeded" {
		t.Errorf("code %q: %s", o.Code, o.Response)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the call took %v", took)
	}
	// The caller leaving (its context cancelled) cuts the request as soon.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start = time.Now()
	o = np.pack.Dispatch(ctx, host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"net.fetch"},"input":{"url":"` + np.url("api.test", "/slow") + `"},"ctx":{"tenantId":"t","runId":"r"}}`), Timeout: time.Minute})
	if o.Code == "" || time.Since(start) > 10*time.Second {
		t.Errorf("a cancelled call: code %q after %v", o.Code, time.Since(start))
	}
}

func TestRequestsPerCallAreCapped(t *testing.T) {
	np := newNetPack(t, host.NetworkConfig{MaxRequests: 3}, netModules[0])
	_, out := np.fetch(t, "net.fetch", map[string]any{"url": np.url("api.test", "/echo"), "times": 4}, time.Minute)
	if out == nil || out["reason"] != "request-limit" {
		t.Errorf("the fourth request: %v", out)
	}
}

func TestNetworkLoadProblems(t *testing.T) {
	wasm := gonetWasm(t)
	schema := `"input":{"type":"object"},"output":{"type":"object"},"modulePath":"gonet.wasm"`
	cases := []struct{ name, tools, want string }{
		{"unrestricted without the operator's leave", `{"id":"net.fetch",` + schema + `,"network":{"kind":"unrestricted"}}`, "net.fetch: network is unrestricted, which this service does not allow (--network-unrestricted)"},
		{"a module that imports http_request for tools without network", `{"id":"net.fetch",` + schema + `}`, "gonet.wasm: the module imports kindgi.http_request, but none of its tools or checks may use the network (network in the index)"},
		{"an allowlist with a URL", `{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["https://api.test/"]}}`, `tools[0] (net.fetch) network.hosts[0] "https://api.test/" is not a host name`},
		{"idempotency for a host off the allowlist", `{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["api.test"],"idempotency":{"other.test":false}}}`,
			`tools[0] (net.fetch) network.idempotency["other.test"]: the host is not one this network lets the tool reach`},
		{"idempotency true", `{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["api.test"],"idempotency":{"api.test":true}}}`,
			`tools[0] (net.fetch) network.idempotency["api.test"] must be false or {"header": name}: a key is sent by default`},
		{"an idempotency header packd may not write", `{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["*.svc.test"],"idempotency":{"*.svc.test":{"header":"Content-Length"}}}}`,
			`tools[0] (net.fetch) network.idempotency["*.svc.test"] header "Content-Length" is not a header name packd may write`},
		{"a credential of both a secret and a variable", `{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["api.test"],"credentials":{"api.test":{"secret":"a","env":"B"}}}}`,
			`tools[0] (net.fetch) network.credentials["api.test"] names "secret" or "env": exactly one`},
		{"a credential for a host off the allowlist", `{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["api.test"],"credentials":{"evil.test":{"secret":"a"}}}}`,
			`tools[0] (net.fetch) network.credentials["evil.test"]: the host is not one this network lets the tool reach`},
		{"a credential in a header packd writes", `{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["api.test"],"credentials":{"api.test":{"secret":"a","header":"Host"}}}}`,
			`tools[0] (net.fetch) network.credentials["api.test"] header "Host" is not a header name packd may write`},
		{"a credential of a variable the index does not declare", `{"id":"net.fetch",` + schema + `,"network":{"kind":"allowlist","hosts":["api.test"],"credentials":{"api.test":{"env":"UNDECLARED"}}}}`,
			`network.credentials binds the environment variable UNDECLARED, which the index's env does not declare (env.required or env.optional)`},
	}
	for _, c := range cases {
		path := writePack(t, indexJSON(c.tools, ""), map[string][]byte{"gonet.wasm": wasm})
		_, err := load(t, path, nil)
		if got := strings.Join(problems(err), "; "); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q", c.name, got)
		}
	}
	path := writePack(t, indexJSON(`{"id":"net.fetch",`+schema+`,"network":{"kind":"unrestricted"}}`, ""), map[string][]byte{"gonet.wasm": wasm})
	p, err := host.Load(context.Background(), host.Config{IndexPath: path, Sandbox: sandbox.Config{CacheDir: cacheDir}, Network: host.NetworkConfig{Unrestricted: true}})
	if err != nil {
		t.Errorf("unrestricted with the operator's leave: %v", err)
	}
	if p != nil {
		_ = p.Close(context.Background())
	}
}

// TestKindgiNetworkAndLimitsAreEnforced: an index as kindgi writes it
// (testdata/kindgi/limits.json: network and limits {memMB, cpuMs} on
// every tool) loads, and each of them holds: the allowlist lets the C
// pack reach the loopback server and nothing else, memMB stops a grow past
// it, cpuMs ends a loop that never ends within its fuel and deadline.
func TestKindgiNetworkAndLimitsAreEnforced(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "customer 42") }))
	t.Cleanup(srv.Close)
	index, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kindgi", "limits.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := writePack(t, string(index), map[string][]byte{"cnet.wasm": netWasm(t, "cnet/cnet.wasm"),
		"hog.wasm": hostileWasm(t, "hog"), "loop.wasm": hostileWasm(t, "loop")})
	p, err := host.Load(context.Background(), host.Config{IndexPath: path, Sandbox: sandbox.Config{CacheDir: cacheDir},
		Network: host.NetworkConfig{AllowAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	for _, spec := range p.Index().Tools {
		if spec.ID == "hostile.loop" && (spec.Limits.Fuel != 50*host.FuelPerMs || spec.Limits.CPUTime != 50*time.Millisecond || spec.Limits.MemoryLimit != 1<<20) {
			t.Errorf("hostile.loop's limits read as %+v", spec)
		}
	}
	call := func(tool, input string) (*host.Outcome, string) {
		o := p.Dispatch(context.Background(), host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"` + tool + `"},"input":` + input + `,"ctx":{"tenantId":"t","runId":"r"}}`), Timeout: time.Minute})
		return o, string(o.Response)
	}
	if o, out := call("net.fetch", `{"url":"`+srv.URL+`/customers/42"}`); o.Code != "" || !strings.Contains(out, `"body":"customer 42"`) {
		t.Errorf("an allowed request: %s", out)
	}
	if _, out := call("net.fetch", `{"url":"http://api.crm.example.net/"}`); !strings.Contains(out, `"reason":"host-not-allowed"`) {
		t.Errorf("a host not on the list: %s", out)
	}
	if _, out := call("net.offline", `{"url":"`+srv.URL+`/"}`); !strings.Contains(out, `"reason":"network-not-allowed"`) {
		t.Errorf("a tool without network: %s", out)
	}
	if o, out := call("hostile.hog", `{}`); o.Code != "handler-throw" || !strings.Contains(out, "out of memory") || o.Usage.MemoryBytes > 64<<20 {
		t.Errorf("a grow past memMB: %s (memory %d)", out, o.Usage.MemoryBytes)
	}
	start := time.Now()
	o, out := call("hostile.loop", `{}`)
	if o.Code != "deadline-exceeded" || o.Usage.Fuel > 50*host.FuelPerMs {
		t.Errorf("a loop under cpuMs 50: %s, fuel %d", out, o.Usage.Fuel)
	}
	if took := time.Since(start); took > host.CPUDeadline(50*time.Millisecond)+5*time.Second {
		t.Errorf("the loop ran %v", took)
	}
}

func TestKindgiLimitProblems(t *testing.T) {
	wasm := netWasm(t, "cnet/cnet.wasm")
	schema := `"input":{"type":"object"},"output":{"type":"object"},"modulePath":"cnet.wasm","network":{"kind":"allowlist","hosts":["x.test"]}`
	for limits, want := range map[string]string{
		`{"memMB":512}`:  "net.fetch: limits.memMB 512 is over the service's memory limit of 256 MiB (--memory-limit-mib)",
		`{"memMB":0}`:    "tools[0] (net.fetch) limits.memMB must be an integer from 1 to 65536",
		`{"cpuMs":1.5}`:  "tools[0] (net.fetch) limits.cpuMs must be an integer from 1 to 86400000",
		`{"cpuMs":"10"}`: "tools[0] (net.fetch) limits.cpuMs must be an integer from 1 to 86400000",
	} {
		path := writePack(t, indexJSON(`{"id":"net.fetch",`+schema+`,"limits":`+limits+`}`, ""), map[string][]byte{"cnet.wasm": wasm})
		_, err := load(t, path, nil)
		if got := strings.Join(problems(err), "; "); !strings.Contains(got, want) {
			t.Errorf("limits %s: %q, want %q", limits, got, want)
		}
	}
	// gonet.wasm starts with about 94 pages (5.9 MiB), as many as its
	// memory section says: the Go SDK's code and data move it.
	gonet := gonetWasm(t)
	ctx := context.Background()
	// (The interpreter reads the module's sections as the compiler does;
	// compiling it took 37 of this test's 48 s under the race detector.)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	c, err := rt.CompileModule(ctx, gonet)
	if err != nil {
		t.Fatal(err)
	}
	mem, ok := c.ExportedMemories()["memory"]
	if !ok || mem.Min() < 64 {
		t.Fatalf("gonet.wasm's memory: %v", mem)
	}
	path := writePack(t, indexJSON(`{"id":"net.fetch",`+strings.Replace(schema, "cnet", "gonet", 1)+`,"limits":{"memMB":4}}`, ""), map[string][]byte{"gonet.wasm": gonet})
	_, err = load(t, path, nil)
	if got, want := strings.Join(problems(err), "; "), fmt.Sprintf("net.fetch: limits.memMB 4 is under the %d KiB of memory module gonet.wasm starts with", mem.Min()*64); !strings.Contains(got, want) {
		t.Errorf("memMB under the module's memory: %q, want %q", got, want)
	}
}
