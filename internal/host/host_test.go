package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/replay"
	"github.com/kindgi/packd/internal/sandbox"
)

var cacheDir = filepath.Join(os.TempDir(), "packd-test-wazero-cache")

func counterWasm(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "counter.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writePack writes an index and the files it names into a fresh directory.
func writePack(t *testing.T, index string, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "index.json")
	if err := os.WriteFile(path, []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func indexJSON(tools, guardrails string, extra ...string) string {
	top := `"v":1,"packId":"p","packVersion":"1.0.0","artifactVersion":"a1","publishedAt":"2026-01-01T00:00:00Z","agents":[],"flows":[]`
	for _, e := range extra {
		top += "," + e
	}
	return fmt.Sprintf(`{%s,"tools":[%s],"guardrails":[%s]}`, top, tools, guardrails)
}

func tool(id, version, module string) string {
	v := ""
	if version != "" {
		v = fmt.Sprintf(`"version":%q,`, version)
	}
	return fmt.Sprintf(`{"id":%q,%s"input":{"type":"object"},"output":{"type":"object"},"modulePath":%q}`, id, v, module)
}

func load(t *testing.T, indexPath string, gate host.Gate) (*host.Pack, error) {
	t.Helper()
	p, err := host.Load(context.Background(), host.Config{
		IndexPath: indexPath, Gate: gate,
		Sandbox: sandbox.Config{CacheDir: cacheDir},
		LookupEnv: func(k string) (string, bool) {
			v, ok := map[string]string{"DECLARED": "yes", "UNDECLARED": "no", "EMPTY": ""}[k]
			return v, ok
		},
	})
	if p != nil {
		t.Cleanup(func() { _ = p.Close(context.Background()) })
	}
	return p, err
}

func problems(err error) []string {
	var le *host.LoadError
	if errors.As(err, &le) {
		return le.Problems
	}
	return nil
}

func TestLoadCollectsEveryProblem(t *testing.T) {
	good := tool("hostile.counter", "1.0.0", "counter.wasm")
	cases := []struct {
		name  string
		index string
		files map[string][]byte
		want  []string
	}{
		{"bad envelope", `{"v":3}`, nil, []string{"Index envelope v3 is not v1"}},
		{"not json", `{`, nil, []string{"Cannot read the pack index: "}},
		{"unknown top-level key, missing fields",
			`{"v":1,"packId":"p","extra":1,"tools":[],"guardrails":[]}`, nil,
			[]string{`Index has an unknown key "extra"`, `Index is missing "packVersion"`, `Index is missing "artifactVersion"`,
				`Index is missing "publishedAt"`, `Index is missing "agents"`, `Index is missing "flows"`}},
		{"missing module", indexJSON(tool("a", "1.0.0", "nope.wasm")+","+tool("b", "1.0.0", "gone.wasm"), ""), nil,
			[]string{"Missing module: nope.wasm", "Missing module: gone.wasm"}},
		{"escapes", indexJSON(tool("a", "", "../x.wasm")+","+tool("b", "", "/etc/passwd")+","+tool("c", "", `dir\x.wasm`), ""), nil,
			[]string{"../x.wasm: module path escapes the module root", "/etc/passwd: a module path must be relative", `dir\x.wasm: a module path must be relative`}},
		{"schema does not compile", indexJSON(`{"id":"hostile.counter","input":{"type":"nonsense"},"output":{"$ref":"https://example.com/x"},"modulePath":"counter.wasm"}`, ""),
			map[string][]byte{"counter.wasm": counterWasm(t)},
			[]string{"hostile.counter: input schema does not compile", "hostile.counter: output schema does not compile"}},
		{"duplicates", indexJSON(good+","+good,
			`{"id":"g1","checkId":"c","kind":"k","action":{},"checkModulePath":"counter.wasm"},{"id":"c","kind":"k","action":{},"checkModulePath":"counter.wasm"}`),
			map[string][]byte{"counter.wasm": counterWasm(t)},
			[]string{"Duplicate tool hostile.counter version 1.0.0", "Duplicate check c", `c: module counter.wasm does not serve check "c" (it serves none)`}},
		{"module does not serve the id", indexJSON(tool("other.id", "", "counter.wasm"), ""),
			map[string][]byte{"counter.wasm": counterWasm(t)},
			[]string{`other.id: module counter.wasm does not serve tool "other.id" (it serves "hostile.counter")`}},
		{"not wasm", indexJSON(tool("a", "", "a.wasm"), ""), map[string][]byte{"a.wasm": []byte("text")},
			[]string{"a.wasm: compiling module"}},
		{"bad fuel limits", indexJSON(`{"id":"hostile.counter","input":{},"output":{},"modulePath":"counter.wasm","limits":{"fuel":-1}},{"id":"b","version":"2","input":{},"output":{},"modulePath":"counter.wasm","limits":{"fuel":"lots"}}`, ""),
			map[string][]byte{"counter.wasm": counterWasm(t)},
			[]string{"tools[0] (hostile.counter) limits.fuel must be a positive integer", "tools[1] (b) limits.fuel must be a positive integer"}},
		{"fuel limits that are not int64 budgets", indexJSON(`{"id":"hostile.counter","input":{},"output":{},"modulePath":"counter.wasm","limits":{"fuel":1.5}},{"id":"b","version":"2","input":{},"output":{},"modulePath":"counter.wasm","limits":{"fuel":1e19}},{"id":"c","version":"2","input":{},"output":{},"modulePath":"counter.wasm","limits":{"fuel":4611686018427389952}}`, ""),
			map[string][]byte{"counter.wasm": counterWasm(t)},
			[]string{"tools[0] (hostile.counter) limits.fuel must be a positive integer up to 4611686018427387904", "tools[1] (b) limits.fuel must be a positive integer", "tools[2] (c) limits.fuel must be a positive integer"}},
		{"bad instance limit", indexJSON(`{"id":"hostile.counter","input":{},"output":{},"modulePath":"counter.wasm","limits":{"instance":"shared"}}`, ""),
			map[string][]byte{"counter.wasm": counterWasm(t)},
			[]string{`tools[0] (hostile.counter) limits.instance must be "fresh" or "pooled"`}},
		{"bad env names", indexJSON(good, "", `"env":{"required":["KINDGI_PACK_SERVICE_TOKEN","1BAD"]}`),
			map[string][]byte{"counter.wasm": counterWasm(t)},
			[]string{`Index env.required: "KINDGI_PACK_SERVICE_TOKEN" is not an allowed`, `Index env.required: "1BAD" is not an allowed`}},
		{"another module than the index's digest", indexJSON(good, "", `"moduleDigests":{"counter.wasm":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`),
			map[string][]byte{"counter.wasm": counterWasm(t)},
			[]string{"counter.wasm is not the module the index names: its SHA-256 is " + replay.ContentHash(counterWasm(t)) + ", the index's moduleDigests says sha256:0000000000000000000000000000000000000000000000000000000000000000"}},
		{"bad digests", indexJSON(good+","+tool("b", "2", "b.wasm"), "", `"moduleDigests":{"counter.wasm":"md5:x","other.wasm":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`), nil,
			[]string{`Index moduleDigests["counter.wasm"] must be "sha256:" and 64 lowercase hex digits, not "md5:x"`,
				`Index moduleDigests names "other.wasm", which no tool or guardrail names`,
				`Index moduleDigests has no digest of "b.wasm"`, "Missing module: counter.wasm", "Missing module: b.wasm"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, writePack(t, c.index, c.files), nil)
			got := problems(err)
			if len(got) != len(c.want) {
				t.Fatalf("problems = %q, want %d like %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d = %q, want it to start with %q", i, got[i], w)
				}
			}
		})
	}
}

func TestModulePathCannotFollowASymlinkOut(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "counter.wasm"), counterWasm(t), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := writePack(t, indexJSON(tool("hostile.counter", "", "link/counter.wasm"), ""), nil)
	if err := os.Symlink(outside, filepath.Join(filepath.Dir(idx), "link")); err != nil {
		t.Fatal(err)
	}
	_, err := load(t, idx, nil)
	if got := problems(err); len(got) != 1 || !strings.Contains(got[0], "escapes the module root") {
		t.Fatalf("problems = %q", got)
	}
}

// TestModuleDigestsLoadTheModuleNamed: a module whose bytes have the
// digest the index names loads.
func TestModuleDigestsLoadTheModuleNamed(t *testing.T) {
	idx := indexJSON(tool("hostile.counter", "1.0.0", "counter.wasm"), "", `"moduleDigests":{"counter.wasm":"`+replay.ContentHash(counterWasm(t))+`"}`)
	p, err := load(t, writePack(t, idx, map[string][]byte{"counter.wasm": counterWasm(t)}), nil)
	if err != nil || p.Index().ModuleDigests["counter.wasm"] != replay.ContentHash(counterWasm(t)) {
		t.Fatalf("%v %v", err, p)
	}
}

func TestValidPackLoadsWithoutProblems(t *testing.T) {
	p, err := load(t, writePack(t, indexJSON(tool("hostile.counter", "1.0.0", "counter.wasm"), "", `"env":{"required":["DECLARED","MISSING","EMPTY"],"optional":["ALSO"]}`),
		map[string][]byte{"counter.wasm": counterWasm(t)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Index().Hash, "sha256:") || len(p.Index().Hash) != 71 {
		t.Errorf("hash %q", p.Index().Hash)
	}
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"DECLARED": "x", "EMPTY": ""}[k]
		return v, ok
	}
	if got := p.MissingEnv(lookup); !slices.Equal(got, []string{"MISSING", "EMPTY"}) {
		t.Errorf("MissingEnv = %q", got)
	}
}

// versionsPack serves hostile.counter twice (1.0.0, 2.0.0) and once unversioned as "solo".
func versionsPack(t *testing.T, gate host.Gate) *host.Pack {
	t.Helper()
	w := map[string][]byte{"counter.wasm": counterWasm(t), "c2.wasm": counterWasm(t)}
	p, err := load(t, writePack(t, indexJSON(
		tool("hostile.counter", "1.0.0", "counter.wasm")+","+tool("hostile.counter", "2.0.0", "c2.wasm"), ""), w), gate)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func dispatch(p *host.Pack, body string) (*host.Outcome, map[string]any) {
	o := p.Dispatch(context.Background(), host.Request{Body: []byte(body)})
	var m map[string]any
	_ = json.Unmarshal(o.Response, &m)
	return o, m
}

func TestMalformedMessagesGetTheExactErrors(t *testing.T) {
	p := versionsPack(t, nil)
	ctx := `"ctx":{"tenantId":"t","runId":"r"}`
	cases := []struct {
		body, code, message string
		parsed              bool
	}{
		{`nope`, "malformed-message", "Request body is not valid JSON", false},
		{`[1]`, "malformed-message", "Message must be a JSON object", false},
		{`{}`, "unknown-protocol-version", "Expected protocol v2, got undefined", false},
		{`{"v":"2","kind":"invoke"}`, "unknown-protocol-version", `Expected protocol v2, got "2"`, false},
		{`{"v":1,"kind":"bogus"}`, "unknown-protocol-version", "Expected protocol v2, got 1", false},
		{`{"v":2,"kind":"bogus"}`, "unexpected-message-kind", `Unknown request kind "bogus"`, false},
		{`{"v":2}`, "unexpected-message-kind", `Unknown request kind undefined`, false},
		{`{"v":2,"kind":"invoke",` + ctx + `}`, "malformed-message", "`tool.id` is required", false},
		{`{"v":2,"kind":"invoke","tool":{"id":""},` + ctx + `}`, "malformed-message", "`tool.id` is required", false},
		{`{"v":2,"kind":"invoke","tool":{"id":7},` + ctx + `}`, "malformed-message", "`tool.id` is required", false},
		{`{"v":2,"kind":"invoke","tool":{"id":"x","version":1},` + ctx + `}`, "malformed-message", "`tool.version` must be a string", false},
		{`{"v":2,"kind":"invoke","tool":{"id":"x"},"input":{}}`, "malformed-message", "`ctx` needs string `tenantId` and `runId`", false},
		{`{"v":2,"kind":"invoke","tool":{"id":"x"},"ctx":{"tenantId":"t"}}`, "malformed-message", "`ctx` needs string `tenantId` and `runId`", false},
		{`{"v":2,"kind":"invoke","tool":{"id":"x"},"ctx":{"tenantId":null,"runId":"r"}}`, "malformed-message", "`ctx` needs string `tenantId` and `runId`", false},
		{`{"v":2,"kind":"invoke","tool":{"id":"x"},"ctx":[]}`, "malformed-message", "`ctx` needs string `tenantId` and `runId`", false},
		{`{"v":2,"kind":"check-invoke","config":{}}`, "malformed-message", "`check.id` is required", false},
		{`{"v":2,"kind":"check-invoke","check":{"id":"c"},"config":[]}`, "malformed-message", "`config` must be an object", false},
		{`{"v":2,"kind":"check-invoke","check":{"id":"c"}}`, "malformed-message", "`config` must be an object", false},
		{`{"v":2,"kind":"invoke","tool":{"id":"nope"},"input":{},` + ctx + `}`, "tool-not-in-pack", `This pack has no tool "nope"`, true},
		{`{"v":2,"kind":"check-invoke","check":{"id":"nope"},"config":{},"trace":{}}`, "check-not-in-pack", `This pack has no check "nope"`, true},
		{`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"input":{},` + ctx + `}`, "tool-version-mismatch",
			`Tool "hostile.counter" is 1.0.0, 2.0.0 in this pack; the caller named no version`, true},
		{`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter","version":"3.0.0"},"input":{},` + ctx + `}`, "tool-version-mismatch",
			`Tool "hostile.counter" is 1.0.0, 2.0.0 in this pack; the caller asked for 3.0.0`, true},
		{`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter","version":"2.0.0"},"input":[],` + ctx + `}`, "input-validation-failed",
			`Tool "hostile.counter" input failed validation`, true},
	}
	for _, c := range cases {
		t.Run(c.body, func(t *testing.T) {
			o, m := dispatch(p, c.body)
			if m["code"] != c.code || m["message"] != c.message || m["kind"] != "error" || m["v"] != 2.0 {
				t.Fatalf("got %s", o.Response)
			}
			if o.Parsed != c.parsed || o.Code != abi.Code(c.code) {
				t.Errorf("Parsed = %v, Code = %q", o.Parsed, o.Code)
			}
			if c.parsed && m["toolId"] == nil && m["checkId"] == nil {
				t.Errorf("no toolId/checkId: %s", o.Response)
			}
		})
	}
}

func TestNamedVersionRunsThatVersion(t *testing.T) {
	p := versionsPack(t, nil)
	o, _ := dispatch(p, `{"v":2,"kind":"invoke","tool":{"id":"hostile.counter","version":"2.0.0"},"input":{},"ctx":{"tenantId":"t","runId":"r","extra":1}}`)
	if string(o.Response) != `{"v":2,"kind":"result","output":{"global":1,"memory":1}}` || o.Call.Version != "2.0.0" || !o.OK() {
		t.Fatalf("%s %+v", o.Response, o)
	}
	if o.Call.TenantID != "t" || o.Call.RunID != "r" {
		t.Errorf("ctx ids not kept for the record")
	}
}

type gateFunc func(context.Context, host.Call) error

func (f gateFunc) Check(ctx context.Context, r host.Call) error { return f(ctx, r) }

func TestGateDeniesAndFailsClosed(t *testing.T) {
	var seen []host.Call
	p := versionsPack(t, gateFunc(func(_ context.Context, r host.Call) error {
		seen = append(seen, r)
		switch r.TenantID {
		case "denied":
			return &host.Deny{Reason: "tenant denied may not call " + r.ID}
		case "broken":
			return errors.New("policy backend at 10.0.0.7 timed out")
		}
		return nil
	}))
	msg := func(tenant string) string {
		return `{"v":2,"kind":"invoke","tool":{"id":"hostile.counter","version":"1.0.0"},"input":{},"ctx":{"tenantId":"` + tenant + `","runId":"r"}}`
	}
	o, _ := dispatch(p, msg("denied"))
	if o.Refusal == nil || o.Refusal.Code != host.RefusalGateDenied || o.Response != nil || o.Refusal.Reason != "tenant denied may not call hostile.counter" {
		t.Fatalf("deny: %+v", o)
	}
	o, _ = dispatch(p, msg("broken"))
	if o.Refusal == nil || o.Refusal.Code != host.RefusalGateFailed || o.Response != nil || strings.Contains(o.Refusal.Reason, "10.0.0.7") {
		t.Fatalf("gate failure must refuse without echoing backend text: %+v", o.Refusal)
	}
	o, _ = dispatch(p, msg("ok"))
	if !o.OK() {
		t.Fatalf("allowed call: %s", o.Response)
	}
	if len(seen) != 3 || seen[0].ID != "hostile.counter" || seen[0].Version != "1.0.0" || seen[0].RunID != "r" {
		t.Fatalf("gate saw %+v", seen)
	}
	// A malformed context is rejected before the gate is consulted.
	dispatch(p, `{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"ctx":{"tenantId":5,"runId":"r"}}`)
	if len(seen) != 3 {
		t.Fatal("the gate saw a malformed message")
	}
}

func TestPinTenantRefusesOtherTenants(t *testing.T) {
	p := versionsPack(t, nil)
	msg := func(tenant string) []byte {
		return []byte(`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter","version":"1.0.0"},"input":{},"ctx":{"tenantId":"` + tenant + `","runId":"r"}}`)
	}
	if o := p.Dispatch(context.Background(), host.Request{Body: msg("t-other"), TenantPin: "t-pinned"}); o.Refusal == nil || o.Refusal.Code != host.RefusalTenantMismatch || o.Response != nil {
		t.Fatalf("other tenant: %+v", o)
	}
	if o := p.Dispatch(context.Background(), host.Request{Body: msg("t-pinned"), TenantPin: "t-pinned"}); !o.OK() {
		t.Fatalf("pinned tenant: %s", o.Response)
	}
	if o := p.Dispatch(context.Background(), host.Request{Body: msg("t-other")}); !o.OK() {
		t.Fatalf("unpinned: %s", o.Response)
	}
}

func TestToolFuelLimitAndOutOfFuel(t *testing.T) {
	p := loadIndex(t, filepath.Join("..", "..", "testdata", "hostile", "index.json"), true)
	// hostile.fill has limits.fuel 20000000 in the index.
	o, m := dispatch(p, `{"v":2,"kind":"invoke","tool":{"id":"hostile.fill"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)
	want := "hostile.fill passed its deadline: it ran out of fuel after using 20000000 units"
	if m["code"] != "deadline-exceeded" || m["message"] != want || o.Usage.Fuel != 20000000 {
		t.Fatalf("%s (fuel %d)", o.Response, o.Usage.Fuel)
	}
	o, _ = dispatch(p, `{"v":2,"kind":"invoke","tool":{"id":"hostile.work"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)
	o2, _ := dispatch(p, `{"v":2,"kind":"invoke","tool":{"id":"hostile.work"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`)
	if !o.OK() || o.Usage.Fuel <= 0 || o.Usage.Fuel != o2.Usage.Fuel {
		t.Fatalf("work: %s, fuel %d then %d", o.Response, o.Usage.Fuel, o2.Usage.Fuel)
	}
}
