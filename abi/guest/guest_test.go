package guest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kindgi/packd/abi/guest/wire"
)

// resetRegistry empties the registry, so a test can run again (-count).
func resetRegistry() {
	mu.Lock()
	defer mu.Unlock()
	registered.Store(noHandlers())
	toolSpecs, checkSpecs = map[string]wire.ToolSpec{}, map[string]wire.CheckSpec{}
	envSpec = wire.EnvSpec{}
}

func TestDispatchRunsHandlersAndReportsThrows(t *testing.T) {
	resetRegistry()
	defer resetRegistry()
	Tool("sdk.echo", func(in json.RawMessage, ctx *Context) (any, error) {
		return map[string]any{"in": in, "tenant": ctx.TenantID, "env": ctx.Env["A"]}, nil
	})
	Tool("sdk.fails", func(json.RawMessage, *Context) (any, error) {
		return nil, &Error{Name: "RangeError", Message: "too far"}
	})
	Tool("sdk.plain-error", func(json.RawMessage, *Context) (any, error) { return nil, errors.New("nope") })
	Tool("sdk.panics", func(json.RawMessage, *Context) (any, error) { panic("oh no") })
	Check("sdk.check", func(config, trace json.RawMessage) (any, error) {
		return map[string]any{"passed": string(config) == `{"x":1}`}, nil
	})

	cases := []struct {
		req    string
		status wire.Status
		resp   string
	}{
		{`{"kind":"invoke","tool":{"id":"sdk.echo"},"input":{"b":1,"a":2},"ctx":{"tenantId":"t","runId":"r","env":{"A":"x"}}}`,
			wire.StatusOK, `{"env":"x","in":{"b":1,"a":2},"tenant":"t"}`},
		{`{"kind":"invoke","tool":{"id":"sdk.fails"},"input":{},"ctx":{}}`,
			wire.StatusThrown, `{"name":"RangeError","message":"too far","stack":"RangeError: too far"}`},
		{`{"kind":"invoke","tool":{"id":"sdk.plain-error"},"input":{},"ctx":{}}`,
			wire.StatusThrown, `{"name":"Error","message":"nope","stack":"Error: nope"}`},
		{`{"kind":"invoke","tool":{"id":"sdk.missing"},"input":{},"ctx":{}}`, wire.StatusNoHandler, ``},
		{`{"kind":"check-invoke","check":{"id":"sdk.check"},"config":{"x":1},"trace":{}}`, wire.StatusOK, `{"passed":true}`},
		{`{"kind":"check-invoke","check":{"id":"sdk.none"},"config":{},"trace":{}}`, wire.StatusNoHandler, ``},
	}
	for _, c := range cases {
		status, resp := Dispatch([]byte(c.req))
		if status != c.status || string(resp) != c.resp {
			t.Errorf("%s:\n got %d %s\nwant %d %s", c.req, status, resp, c.status, c.resp)
		}
	}
	status, resp := Dispatch([]byte(`{"kind":"invoke","tool":{"id":"sdk.panics"},"input":{},"ctx":{}}`))
	var thrown struct{ Name, Message string }
	if _ = json.Unmarshal(resp, &thrown); status != wire.StatusThrown || thrown.Name != "Panic" || thrown.Message != "oh no" {
		t.Errorf("panic: %d %s", status, resp)
	}
	if got := string(Describe()); got != `{"tools":["sdk.echo","sdk.fails","sdk.panics","sdk.plain-error"],"checks":["sdk.check"],`+
		`"toolSpecs":[{"id":"sdk.echo"},{"id":"sdk.fails"},{"id":"sdk.panics"},{"id":"sdk.plain-error"}],`+
		`"checkSpecs":[{"id":"sdk.check"}]}` {
		t.Errorf("Describe = %s", got)
	}
	if status, _ := Dispatch([]byte(`not json`)); status != wire.StatusThrown {
		t.Errorf("a bad request must be reported as a throw, got %d", status)
	}
}

// TestPrewarmLeavesNoTrace: the SDK's init-time JSON work registers
// nothing and leaves dispatch as it was.
func TestPrewarmLeavesNoTrace(t *testing.T) {
	before := string(Describe())
	prewarm()
	if got := string(Describe()); got != before {
		t.Fatalf("describe %s, before %s", got, before)
	}
}

// TestAnEchoAnswersWhatJSONMarshalWould: a handler answering with its
// input sends json.Marshal's bytes of it: the input as it came when it is
// compact without a character json.Marshal escapes, and else compacted
// and escaped.
// The same for a raw handler (AnyRawTool), as the echo example is.
func TestAnEchoAnswersWhatJSONMarshalWould(t *testing.T) {
	defer resetRegistry()
	for _, raw := range []bool{false, true} {
		resetRegistry()
		if raw {
			AnyRawTool(func(_ string, in json.RawMessage, _ *Context) (json.RawMessage, error) { return in, nil })
		} else {
			AnyTool(func(_ string, in json.RawMessage, _ *Context) (any, error) { return in, nil })
		}
		for _, input := range []string{
			`{"items":[{"id":1,"name":"item 1","tags":["a","b"],"ok":true}]}`,
			`{"a": [1, 2]}`, `{"html":"<b>&amp;</b>"}`, "{\"ls\":\"\u2028\"}", `"x"`, `null`, `[]`,
		} {
			status, resp := Dispatch([]byte(`{"kind":"invoke","tool":{"id":"x"},"input":` + input + `,"ctx":{}}`))
			want, _ := json.Marshal(json.RawMessage(input))
			if status != wire.StatusOK || string(resp) != string(want) {
				t.Errorf("raw %v: echo of %s: status %d, %s; want %s", raw, input, status, resp, want)
			}
		}
	}
}

// TestRawHandlersAnswerAsValueHandlersDo: a raw handler's JSON goes out
// as the same JSON in a json.RawMessage from a value handler would (as it
// is, compacted and escaped, null for nil, a TypeError when it is not
// JSON); an id's own handler wins over AnyRawTool; a panic is a throw.
func TestRawHandlersAnswerAsValueHandlersDo(t *testing.T) {
	resetRegistry()
	defer resetRegistry()
	var answer json.RawMessage
	RawTool("sdk.raw", func(json.RawMessage, *Context) (json.RawMessage, error) { return answer, nil })
	Tool("sdk.value", func(json.RawMessage, *Context) (any, error) { return answer, nil })
	RawTool("sdk.raw-fails", func(json.RawMessage, *Context) (json.RawMessage, error) {
		return nil, &Error{Name: "RangeError", Message: "too far"}
	})
	RawTool("sdk.raw-panics", func(json.RawMessage, *Context) (json.RawMessage, error) { panic("oh no") })
	AnyRawTool(func(id string, in json.RawMessage, ctx *Context) (json.RawMessage, error) {
		if id == "sdk.tenant" {
			return json.RawMessage(`"` + ctx.TenantID + `"`), nil
		}
		return in, nil
	})
	for _, a := range []json.RawMessage{nil, json.RawMessage(`{"a":1}`), json.RawMessage(`{"a": [1, 2]}`),
		json.RawMessage(`{"html":"<b>"}`), json.RawMessage(`{"a":`), json.RawMessage(``), json.RawMessage(`1 2`)} {
		answer = a
		rawStatus, raw := Dispatch([]byte(`{"kind":"invoke","tool":{"id":"sdk.raw"},"input":{},"ctx":{}}`))
		valueStatus, value := Dispatch([]byte(`{"kind":"invoke","tool":{"id":"sdk.value"},"input":{},"ctx":{}}`))
		if rawStatus != valueStatus || string(raw) != string(value) {
			t.Errorf("answer %q: raw handler %d %s, value handler %d %s", a, rawStatus, raw, valueStatus, value)
		}
	}
	cases := []struct {
		req    string
		status wire.Status
		resp   string
	}{
		{`{"kind":"invoke","tool":{"id":"sdk.any"},"input":{"b":1,"a":[2]},"ctx":{}}`, wire.StatusOK, `{"b":1,"a":[2]}`},
		{`{"kind":"invoke","tool":{"id":"sdk.any"},"input":{"b": 1},"ctx":{}}`, wire.StatusOK, `{"b":1}`},
		{`{"kind":"invoke","tool":{"id":"sdk.tenant"},"input":{},"ctx":{"tenantId":"t1"}}`, wire.StatusOK, `"t1"`},
		{`{"kind":"invoke","tool":{"id":"sdk.raw-fails"},"input":{},"ctx":{}}`,
			wire.StatusThrown, `{"name":"RangeError","message":"too far","stack":"RangeError: too far"}`},
	}
	for _, c := range cases {
		if status, resp := Dispatch([]byte(c.req)); status != c.status || string(resp) != c.resp {
			t.Errorf("%s:\n got %d %s\nwant %d %s", c.req, status, resp, c.status, c.resp)
		}
	}
	status, resp := Dispatch([]byte(`{"kind":"invoke","tool":{"id":"sdk.raw-panics"},"input":{},"ctx":{}}`))
	var thrown struct{ Name, Message string }
	if _ = json.Unmarshal(resp, &thrown); status != wire.StatusThrown || thrown.Name != "Panic" || thrown.Message != "oh no" {
		t.Errorf("panic: %d %s", status, resp)
	}
	if got := string(Describe()); got != `{"tools":["*","sdk.raw","sdk.raw-fails","sdk.raw-panics","sdk.value"],"checks":[],`+
		`"toolSpecs":[{"id":"sdk.raw"},{"id":"sdk.raw-fails"},{"id":"sdk.raw-panics"},{"id":"sdk.value"}]}` {
		t.Errorf("Describe = %s", got)
	}
	for name, register := range map[string]func(){
		"duplicate": func() {
			RawTool("sdk.value", func(json.RawMessage, *Context) (json.RawMessage, error) { return nil, nil })
		},
		"nil":   func() { RawTool("sdk.nil", nil) },
		"no id": func() { RawTool("", func(json.RawMessage, *Context) (json.RawMessage, error) { return nil, nil }) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: RawTool did not panic", name)
				}
			}()
			register()
		}()
	}
}
