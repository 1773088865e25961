package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/host/internal/egress/egresstest"
	"github.com/kindgi/packd/internal/replay"
	"github.com/kindgi/packd/internal/sandbox"
)

// recordedNetPack loads testdata/gonet recording its calls, with the
// environment variable REGION_KEY set, next to a loopback server whose
// /headers answer reflects the Authorization the pack sends; requests
// counts the outbound requests sent.
func recordedNetPack(t *testing.T, rc host.RecordConfig, limits string) (p *host.Pack, port string, requests *atomic.Int64) {
	t.Helper()
	_, port = egresstest.Server(t)
	requests = new(atomic.Int64)
	schema := `"input":{"type":"object"},"output":{"type":"object"},"modulePath":"gonet.wasm"`
	index := indexJSON(`{"id":"net.fetch",`+schema+`,"network":{"kind":"allowlist","hosts":["api.test"]}`+limits+`},`+
		`{"id":"net.offline",`+schema+`,"network":{"kind":"none"},"limits":{"record":false}}`, "", `"env":{"required":[],"optional":["REGION_KEY"]}`)
	path := writePack(t, index, map[string][]byte{"gonet.wasm": gonetWasm(t)})
	p, err := host.Load(context.Background(), host.Config{IndexPath: path, Record: &rc,
		Sandbox: sandbox.Config{CacheDir: cacheDir, PoolSize: 2},
		LookupEnv: func(k string) (string, bool) {
			return map[string]string{"REGION_KEY": "eu-region-secret"}[k], k == "REGION_KEY"
		},
		Network: host.NetworkConfig{
			AllowAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
			LookupHost: func(context.Context, string) ([]netip.Addr, error) {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			},
		},
		Observe: host.Observer{EgressRequest: func(host.EgressEvent) { requests.Add(1) }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p, port, requests
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestARecordedCallReplaysOffline: a Go pack's call that reads the clock,
// draws random bytes (its runtime does), gets its environment and a
// secret, and sends an outbound request whose answer reflects the secret,
// is recorded in a file that holds neither the secret nor the
// environment's value, only their hashes; replayed with them supplied, it
// gives the same output and fuel without reaching the server. Without
// them, the snapshot (the Go runtime keeps its environment) and the
// request (its Authorization) differ, and the replay says so; a target
// whose limits.record is false is never recorded.
func TestARecordedCallReplaysOffline(t *testing.T) {
	p, port, requests := recordedNetPack(t, host.RecordConfig{}, "")
	const token = "tok-abcdef123456"
	body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":"net.fetch"},"input":{"url":"http://api.test:%s/headers?q=1"},"ctx":{"tenantId":"t","runId":"r","secrets":{"apiToken":%q}}}`, port, token)
	o := p.Dispatch(context.Background(), host.Request{Body: []byte(body)})
	if !o.OK() || o.Record == nil || requests.Load() != 1 {
		t.Fatalf("the call: %s (record %v, skipped %q, %d requests)", o.Response, o.Record != nil, o.RecordSkipped, requests.Load())
	}
	if !strings.Contains(string(o.Response), "Bearer "+token) {
		t.Fatalf("the upstream's answer does not reflect the token: %s", o.Response)
	}
	file, err := o.Record.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{token, "eu-region-secret"} {
		if strings.Contains(string(file), secret) {
			t.Fatalf("the record holds the secret %q: %s", secret, file)
		}
	}
	if !strings.Contains(string(file), hashOf(token)) || !strings.Contains(string(file), hashOf("eu-region-secret")) {
		t.Fatalf("the record lacks the secrets' hashes: %s", file)
	}
	rec, err := replay.Read(file)
	if err != nil || !json.Valid(file) || rec.Snapshot == nil || rec.Snapshot.ID != o.Record.Snapshot.ID || len(rec.Snapshot.Tape) != len(o.Record.Snapshot.Tape) {
		t.Fatalf("the record file does not read back: %v\n%s", err, file)
	}
	var imports []string
	for _, a := range rec.Tape {
		imports = append(imports, a.Import)
	}
	if joined := strings.Join(imports, " "); !strings.Contains(joined, "http_request") || rec.Snapshot == nil || len(rec.Snapshot.Tape) == 0 {
		t.Fatalf("the call's tape: %s; its snapshot %+v", joined, rec.Snapshot)
	}
	rp := replay.NewReplayer(replay.Config{Sandbox: sandbox.Config{CacheDir: cacheDir}, Secret: func(name string) (string, bool) {
		v, ok := map[string]string{"ctx.secrets.apiToken": token, "env.REGION_KEY": "eu-region-secret"}[name]
		return v, ok
	}})
	defer rp.Close(context.Background())
	got, err := rp.Replay(context.Background(), rec, gonetWasm(t))
	if err != nil || !got.Identical() || got.ModuleChanged || got.SnapshotChanged || len(got.Placeholders) != 0 {
		t.Fatalf("the replay with the secrets: %+v %v", got, err)
	}
	if got.Result.Fuel != o.Usage.Fuel || !strings.Contains(string(got.Result.Output), "Bearer "+token) || requests.Load() != 1 {
		t.Fatalf("the replay: fuel %d (call %d), output %s; the server got %d requests", got.Result.Fuel, o.Usage.Fuel, got.Result.Output, requests.Load())
	}

	bare := replay.NewReplayer(replay.Config{Sandbox: sandbox.Config{CacheDir: cacheDir}})
	defer bare.Close(context.Background())
	got, err = bare.Replay(context.Background(), rec, gonetWasm(t))
	if err != nil || got.Identical() || !got.SnapshotChanged || strings.Join(got.Placeholders, " ") != "ctx.secrets.apiToken env.REGION_KEY" ||
		got.Divergence == nil || !strings.Contains(got.Divergence.Error(), "http_request GET http://api.test #") {
		t.Fatalf("the replay without the secrets: %+v %v", got, err)
	}

	off := p.Dispatch(context.Background(), host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"net.offline"},"input":{"url":"http://x/"},"ctx":{"tenantId":"t","runId":"r"}}`)})
	if !off.OK() || off.Record != nil || off.RecordSkipped != "" {
		t.Fatalf("a target whose limits.record is false: %s, record %v", off.Response, off.Record != nil)
	}
}

// TestARecordIsBoundedWithItsSnapshot: a record carries the tape of its
// snapshot's initialisation, and the per-call bound counts it: a module
// whose _initialize drew 2 MiB of random bytes is not recorded under the
// default 1 MiB (too-large), nor is a call that reads the clock a million
// times; under a 4 MiB bound the first is, and replays identically on a
// snapshot rebuilt from those 2 MiB.
func TestARecordIsBoundedWithItsSnapshot(t *testing.T) {
	call := func(name string, rc host.RecordConfig) *host.Outcome {
		wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		path := writePack(t, indexJSON(tool("hostile."+name, "", name+".wasm"), ""), map[string][]byte{name + ".wasm": wasm})
		p, err := host.Load(context.Background(), host.Config{IndexPath: path, Record: &rc, Sandbox: sandbox.Config{CacheDir: cacheDir, PoolSize: 1}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		return p.Dispatch(context.Background(), host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"hostile.` + name + `"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)})
	}
	for _, name := range []string{"initdraw", "clockflood"} {
		if o := call(name, host.RecordConfig{}); o.Record != nil || o.RecordSkipped != host.RecordTooLarge {
			t.Errorf("%s under the default bound: record %v, skipped %q (%s)", name, o.Record != nil, o.RecordSkipped, o.Response)
		}
	}
	o := call("initdraw", host.RecordConfig{MaxCallBytes: 4 << 20})
	drawn := 0
	if o.Record != nil && o.Record.Snapshot != nil {
		for _, a := range o.Record.Snapshot.Tape {
			drawn += len(a.Value)
		}
	}
	if drawn != 2<<20 {
		t.Fatalf("initdraw under 4 MiB: %d bytes on the snapshot's tape; skipped %q, %s", drawn, o.RecordSkipped, o.Response)
	}
	rp := replay.NewReplayer(replay.Config{Sandbox: sandbox.Config{CacheDir: cacheDir}})
	defer rp.Close(context.Background())
	wasm, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "initdraw.wasm"))
	got, err := rp.Replay(context.Background(), o.Record, wasm)
	if err != nil || !got.Identical() || got.SnapshotChanged {
		t.Fatalf("initdraw replayed: %+v %v", got, err)
	}
}

// TestRecordMarkedTargetsOnly: under RecordConfig.Marked only a target
// whose limits.record is true is recorded; limits.record of another type
// is a load problem.
func TestRecordMarkedTargetsOnly(t *testing.T) {
	body := func(port string) []byte {
		return []byte(`{"v":2,"kind":"invoke","tool":{"id":"net.fetch"},"input":{"url":"http://api.test:` + port + `/echo"},"ctx":{"tenantId":"t","runId":"r"}}`)
	}
	p, port, _ := recordedNetPack(t, host.RecordConfig{Marked: true}, `,"limits":{"record":true}`)
	if o := p.Dispatch(context.Background(), host.Request{Body: body(port)}); !o.OK() || o.Record == nil {
		t.Fatalf("a marked target: %s, record %v", o.Response, o.Record != nil)
	}
	p, port, _ = recordedNetPack(t, host.RecordConfig{Marked: true}, "")
	if o := p.Dispatch(context.Background(), host.Request{Body: body(port)}); !o.OK() || o.Record != nil || o.RecordSkipped != "" {
		t.Fatalf("an unmarked target: %s, record %v", o.Response, o.Record != nil)
	}
	path := writePack(t, indexJSON(`{"id":"x","input":{},"output":{},"modulePath":"c.wasm","limits":{"record":"yes"}}`, ""), map[string][]byte{"c.wasm": counterWasm(t)})
	if _, err := load(t, path, nil); !slices.Contains(problems(err), `tools[0] (x) limits.record must be true or false`) {
		t.Fatalf("limits.record \"yes\": %v", problems(err))
	}
}

// TestACallTheBudgetSqueezedIsNotRecorded: a memory.grow refused by the
// memory budget (what the other calls hold) made the guest compute what no
// replay can repeat, so the call is not recorded (overloaded); one refused
// by its own limit is recorded, and replays identically.
func TestACallTheBudgetSqueezedIsNotRecorded(t *testing.T) {
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "grow.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	call := func(sc sandbox.Config) *host.Outcome {
		path := writePack(t, indexJSON(tool("hostile.grow", "", "grow.wasm"), ""), map[string][]byte{"grow.wasm": wasm})
		sc.CacheDir, sc.PoolSize = cacheDir, 1
		p, err := host.Load(context.Background(), host.Config{IndexPath: path, Record: &host.RecordConfig{}, Sandbox: sc})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		return p.Dispatch(context.Background(), host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"hostile.grow"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)})
	}
	if o := call(sandbox.Config{MemoryBudget: 4 << 20}); o.Record != nil || o.RecordSkipped != host.RecordOverloaded {
		t.Fatalf("grown to the budget: record %v, skipped %q (%s)", o.Record != nil, o.RecordSkipped, o.Response)
	}
	o := call(sandbox.Config{MemoryLimitPages: 32})
	if o.Record == nil || o.Record.Result.Error == "" {
		t.Fatalf("grown to its limit: skipped %q (%s)", o.RecordSkipped, o.Response)
	}
	rp := replay.NewReplayer(replay.Config{Sandbox: sandbox.Config{CacheDir: cacheDir}})
	defer rp.Close(context.Background())
	got, err := rp.Replay(context.Background(), o.Record, wasm)
	if err != nil || !got.Identical() {
		t.Fatalf("grown to its limit, replayed: %+v %v", got, err)
	}
}

// TestReadRecordRefusesImpossibleLengths: a record file is input packd
// replay cannot trust; a secret whose length is past the file (a replay
// would make a placeholder of that length) or a redaction that cannot be
// in it is refused when the record is read.
func TestReadRecordRefusesImpossibleLengths(t *testing.T) {
	base := `{"packdRecord":1,"module":{"path":"m.wasm","sha256":"sha256:00"},"instance":"fresh"`
	if _, err := replay.Read([]byte(base + `}`)); err != nil {
		t.Fatalf("a plain record: %v", err)
	}
	for _, bad := range []string{
		`,"secrets":[{"name":"ctx.secrets.k","sha256":"sha256:00","length":1000000000000}]}`,
		`,"secrets":[{"name":"ctx.secrets.k","sha256":"sha256:00","length":-1}]}`,
		`,"redactions":[{"in":"output","offset":-5,"length":4,"secret":"ctx.secrets.k","form":"raw"}]}`,
		`,"redactions":[{"in":"output","offset":0,"length":1000000000000,"secret":"ctx.secrets.k","form":"raw"}]}`,
	} {
		if _, err := replay.Read([]byte(base + bad)); err == nil || !strings.Contains(err.Error(), "the record's") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestARepeatedSecretIsBoundedInRedactions: a guest that echoes a secret
// it holds many times makes a redaction for each, and they count against
// the record's bound: past it the call is not recorded (too-large),
// rather than kept with a redaction list many times the bound.
func TestARepeatedSecretIsBoundedInRedactions(t *testing.T) {
	p, err := host.Load(context.Background(), host.Config{IndexPath: filepath.Join("..", "..", "wasm-examples", "echo", "index.json"),
		Record: &host.RecordConfig{}, Sandbox: sandbox.Config{CacheDir: cacheDir, PoolSize: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	call := func(times int) *host.Outcome {
		msg := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":%q},"ctx":{"tenantId":"t","runId":"r","secrets":{"k":"abcd"}}}`, strings.Repeat("abcd ", times))
		return p.Dispatch(context.Background(), host.Request{Body: []byte(msg)})
	}
	if o := call(10); !o.OK() || o.Record == nil || len(o.Record.Redactions) != 10+10+10+1 {
		t.Fatalf("10 times: %s; record %v", o.Response, o.Record != nil)
	}
	if o := call(20000); !o.OK() || o.Record != nil || o.RecordSkipped != host.RecordTooLarge {
		t.Fatalf("20,000 times: record %v, skipped %q", o.Record != nil, o.RecordSkipped)
	}
}

// hostilePack loads testdata/hostile/NAME.wasm as the tool hostile.NAME
// (which may reach api.test), recording under rc.
func hostilePack(t *testing.T, name string, rc host.RecordConfig) *host.Pack {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	spec := `{"id":"hostile.` + name + `","input":{"type":"object"},"output":{},"modulePath":"` + name + `.wasm","network":{"kind":"allowlist","hosts":["api.test"]}}`
	path := writePack(t, indexJSON(spec, ""), map[string][]byte{name + ".wasm": wasm})
	p, err := host.Load(context.Background(), host.Config{IndexPath: path, Record: &rc, Sandbox: sandbox.Config{CacheDir: cacheDir, PoolSize: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// TestARecordIsBoundedWhateverTheGuestAsks: at the defaults, a call
// sending 300 requests with 60 KiB URLs (and a snapshot whose
// _initialize sent 150) is recorded in a file of about what its tapes
// count, with no URL in it (before, 300 such requests made an 18 MB
// record, and 1,200 at the defaults 247 MB); and a record whose file
// would pass its bound once encoded (2 MiB of random bytes on its
// snapshot's tape are 2.7 MiB of base64) is too-large: a record file is
// never larger than the per-call bound and replay.OverheadBytes.
func TestARecordIsBoundedWhateverTheGuestAsks(t *testing.T) {
	p := hostilePack(t, "urlflood", host.RecordConfig{})
	pad := strings.Repeat("x", 200)
	o := p.Dispatch(context.Background(), host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"hostile.urlflood"},"input":{"pad":"` + pad + `"},"ctx":{"tenantId":"t","runId":"r"}}`)})
	if o.Record == nil {
		t.Fatalf("not recorded: %q %s", o.RecordSkipped, o.Response)
	}
	file, err := o.Record.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Record.Tape) < 300 || len(o.Record.Snapshot.Tape) != 150 || len(file) > 256<<10 || strings.Contains(string(file), "evil.example/") {
		t.Fatalf("a record of %d bytes, %d answers and %d on its snapshot's tape", len(file), len(o.Record.Tape), len(o.Record.Snapshot.Tape))
	}
	draw := hostilePack(t, "initdraw", host.RecordConfig{MaxCallBytes: 2<<20 + 16<<10})
	o = draw.Dispatch(context.Background(), host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"hostile.initdraw"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)})
	if o.Record == nil {
		t.Fatalf("initdraw under its bound: %q %s", o.RecordSkipped, o.Response)
	}
	if b, err := o.Record.Encode(); !errors.Is(err, replay.ErrTooLarge) {
		t.Fatalf("initdraw's record encoded to %d bytes under a bound of %d: %v", len(b), 2<<20+16<<10+replay.OverheadBytes, err)
	}
}

// TestARecordHoldsNoSecretOfItsURLs: a tool that puts a secret into the
// URLs it fetches (in the query, as Telegram's API has it in the path)
// leaves no trace of it in its record, which names a request by its
// method, scheme, host and a hash of the rest (before, the record held
// the URL three times); and a replay that differs never prints it,
// neither in a divergence nor in quoting the output.
func TestARecordHoldsNoSecretOfItsURLs(t *testing.T) {
	p, port, _ := recordedNetPack(t, host.RecordConfig{}, "")
	const token = "bot77-Zq9sECRET"
	body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":"net.fetch"},"input":{"url":"http://api.test:%s/headers?bot=%s&t=%s"},"ctx":{"tenantId":"t","runId":"r","secrets":{"apiToken":%q}}}`, port, token, url.QueryEscape(token+"/x"), token)
	o := p.Dispatch(context.Background(), host.Request{Body: []byte(body)})
	if !o.OK() || o.Record == nil {
		t.Fatalf("the call: %s (skipped %q)", o.Response, o.RecordSkipped)
	}
	file, err := o.Record.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(file), "Zq9s") {
		t.Fatalf("the record holds the secret: %s", file)
	}
	rec, err := replay.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	// A replay given the secret, of a record whose output and request's
	// hash were changed: it differs, and says where without the secret.
	at := strings.Index(string(rec.Result.Output), "***")
	if at < 1 {
		t.Fatalf("the output holds no redacted secret: %s", rec.Result.Output)
	}
	rec.Result.Output[at-1] ^= 1
	rp := replay.NewReplayer(replay.Config{Sandbox: sandbox.Config{CacheDir: cacheDir}, Secret: func(name string) (string, bool) {
		v, ok := map[string]string{"ctx.secrets.apiToken": token, "env.REGION_KEY": "eu-region-secret"}[name]
		return v, ok
	}})
	defer rp.Close(context.Background())
	got, err := rp.Replay(context.Background(), rec, gonetWasm(t))
	if err != nil || got.Identical() || len(got.Differences) == 0 {
		t.Fatalf("the replay of a changed output: %+v %v", got, err)
	}
	if said := fmt.Sprint(got.Differences); strings.Contains(said, "Zq9s") || !strings.Contains(said, "***") {
		t.Fatalf("the replay says %s", said)
	}
	for i, a := range rec.Tape {
		if a.Import == "http_request" {
			rec.Tape[i].Arg ^= 1
		}
	}
	got, err = rp.Replay(context.Background(), rec, gonetWasm(t))
	if err != nil || got.Divergence == nil || strings.Contains(got.Divergence.Error(), "Zq9s") || !strings.Contains(got.Divergence.Error(), "http://api.test #") {
		t.Fatalf("the replay of another request: %+v %v", got, err)
	}
}

// TestASnapshotsTapeHoldsNoSecretOfItsEnvironment: an _initialize that
// sends a request to a host named after an environment value (refused:
// no initialisation reaches the network) leaves the value out of the
// record of a call on its snapshot: the detail is starred (before, the
// snapshot's tape was written as it was, the host in the clear).
func TestASnapshotsTapeHoldsNoSecretOfItsEnvironment(t *testing.T) {
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "initenv.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	spec := `{"id":"hostile.initenv","input":{"type":"object"},"output":{},"modulePath":"initenv.wasm","network":{"kind":"allowlist","hosts":["api.test"]}}`
	path := writePack(t, indexJSON(spec, "", `"env":{"required":["TENANT_HOST"],"optional":[]}`), map[string][]byte{"initenv.wasm": wasm})
	p, err := host.Load(context.Background(), host.Config{IndexPath: path, Record: &host.RecordConfig{}, Sandbox: sandbox.Config{CacheDir: cacheDir, PoolSize: 1},
		LookupEnv: func(k string) (string, bool) { return "acme-s3cr3t-tenant", k == "TENANT_HOST" }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	o := p.Dispatch(context.Background(), host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"hostile.initenv"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)})
	if o.Record == nil || o.Record.Snapshot == nil || len(o.Record.Snapshot.Tape) != 1 {
		t.Fatalf("the call: %s, skipped %q", o.Response, o.RecordSkipped)
	}
	file, err := o.Record.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(file), "s3cr3t") || !strings.Contains(string(file), `http://****************** #`) {
		t.Fatalf("the record: %s", file)
	}
}
