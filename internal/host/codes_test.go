package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/sandbox"
)

func loadIndex(t testing.TB, index string, ignoreProblems bool) *host.Pack {
	t.Helper()
	p, err := host.Load(context.Background(), host.Config{IndexPath: index, Sandbox: sandbox.Config{CacheDir: cacheDir}})
	if p == nil || (err != nil && !ignoreProblems) {
		t.Fatalf("loading %s: %v", index, err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// TestEveryErrorCodeIsProduced drives the dispatcher into each of the
// protocol's 14 error codes, each where PROTOCOL-NOTES puts it.
func TestEveryErrorCodeIsProduced(t *testing.T) {
	conf := loadIndex(t, filepath.Join("..", "..", "wasm-examples", "conformance", "index.json"), false)
	hostile := loadIndex(t, filepath.Join("..", "..", "testdata", "hostile", "index.json"), true) // noexport is a load problem on purpose

	// A pack whose only module does not compile.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "broken.wasm"), []byte("\x00asm\x01\x00\x00\x00\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "index.json")
	if err := os.WriteFile(idx, []byte(indexJSON(tool("b.tool", "", "broken.wasm"), "")), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := loadIndex(t, idx, true)

	ctx := `"ctx":{"tenantId":"t","runId":"r"}`
	inv := func(id, input string) string {
		return `{"v":2,"kind":"invoke","tool":{"id":"` + id + `"},"input":` + input + `,` + ctx + `}`
	}
	cases := []struct {
		pack    *host.Pack
		body    string
		timeout time.Duration
		code    abi.Code
	}{
		{conf, inv("conformance.echo", `{}`), 0, abi.CodeInputValidationFailed},
		{conf, inv("conformance.bad-output", `{}`), 0, abi.CodeOutputValidationFailed},
		{broken, inv("b.tool", `{}`), 0, abi.CodeHandlerImportFailed},
		{hostile, inv("hostile.noexport", `{}`), 0, abi.CodeHandlerShapeInvalid},
		{conf, inv("conformance.throws", `{}`), 0, abi.CodeHandlerThrow},
		{hostile, `{"v":2,"kind":"check-invoke","check":{"id":"hostile.badcheck"},"config":{},"trace":{}}`, 0, abi.CodeCheckShapeInvalid},
		{conf, `{"v":2,"kind":"invoke"`, 0, abi.CodeMalformedMessage},
		{conf, `{"v":3}`, 0, abi.CodeUnknownProtocolVersion},
		{conf, `{"v":2,"kind":"result"}`, 0, abi.CodeUnexpectedMessageKind},
		{conf, inv("nope", `{}`), 0, abi.CodeToolNotInPack},
		{conf, `{"v":2,"kind":"check-invoke","check":{"id":"nope"},"config":{},"trace":{}}`, 0, abi.CodeCheckNotInPack},
		{conf, `{"v":2,"kind":"invoke","tool":{"id":"conformance.echo","version":"2"},"input":{"message":"m"},` + ctx + `}`, 0, abi.CodeToolVersionMismatch},
		{conf, inv("conformance.sleep", `{"ms":60000}`), 200 * time.Millisecond, abi.CodeDeadlineExceeded},
	}
	seen := map[abi.Code]bool{}
	for _, c := range cases {
		o := c.pack.Dispatch(context.Background(), host.Request{Body: []byte(c.body), Timeout: c.timeout})
		if o.Code != c.code {
			t.Errorf("%s: got %s", c.body, o.Response)
		}
		seen[o.Code] = true
	}

	// A check's shape problem says what it answered and what it must answer.
	o := hostile.Dispatch(context.Background(), host.Request{Body: []byte(`{"v":2,"kind":"check-invoke","check":{"id":"hostile.badcheck"},"config":{},"trace":{}}`)})
	if want := `{"v":2,"kind":"error","code":"check-shape-invalid","message":"Check \"hostile.badcheck\" returned a result without a boolean ` + "`passed`" +
		`: {\"passed\":\"yes\"} (a check answers an object with a boolean \"passed\", e.g. {\"passed\":false,\"reason\":\"too short\"})","checkId":"hostile.badcheck"}`; string(o.Response) != want {
		t.Errorf("check shape:\n got %s\nwant %s", o.Response, want)
	}

	// cancelled: the caller goes away while the guest sleeps.
	cctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	o = conf.Dispatch(cctx, host.Request{Body: []byte(inv("conformance.sleep", `{"ms":60000}`))})
	if string(o.Response) != `{"v":2,"kind":"error","code":"cancelled","message":"conformance.sleep was cancelled","toolId":"conformance.sleep"}` {
		t.Errorf("cancel: %s", o.Response)
	}
	seen[o.Code] = true

	for _, code := range abi.Codes() {
		if !seen[code] {
			t.Errorf("no case produced %s", code)
		}
	}
}

// FuzzDispatch: any request body gets a well-formed response message and
// never panics the host.
func FuzzDispatch(f *testing.F) {
	p := loadIndex(f, filepath.Join("..", "..", "testdata", "hostile", "index.json"), true)
	for _, s := range []string{
		`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
		`{"v":2,"kind":"check-invoke","check":{"id":"hostile.badcheck"},"config":{},"trace":null}`,
		`{"v":2,"kind":"invoke","tool":{"id":"hostile.trap","version":"1.0.0"},"input":[],"ctx":{"tenantId":"t","runId":"r"}}`,
		`[]`, `{"v":2}`, `nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o := p.Dispatch(context.Background(), host.Request{Body: body, Timeout: time.Second})
		if o.Refusal == nil && len(o.Response) == 0 {
			t.Fatal("no response")
		}
		if o.Code == "" && !o.Parsed {
			t.Fatalf("a result for an unparsed message: %s", o.Response)
		}
	})
}

// TestExcerptIsBoundedAndValid: what an error message shows of a guest's
// answer is at most maxExcerpt bytes and "…", cut at a character, and
// valid UTF-8 whatever the guest wrote.
func TestExcerptIsBoundedAndValid(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"ok":true}`, `{"ok":true}`},
		{strings.Repeat("a", 95) + "é", strings.Repeat("a", 95) + "…"},
		{strings.Repeat("a", 96), strings.Repeat("a", 96)},
		{"\xff\xfe", "\uFFFD"},
	} {
		if got := host.Excerpt([]byte(c.in)); got != c.want {
			t.Errorf("excerpt(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
