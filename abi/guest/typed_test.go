package guest

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/abi/guest/wire"
)

type expense struct {
	Vendor      string   `json:"vendor" desc:"Who was paid."`
	AmountCents int64    `json:"amountCents"`
	Tags        []string `json:"tags,omitempty"`
	Note        *string  `json:"note,omitempty"`
	internal    int
	Skipped     bool `json:"-"`
}

type recorded struct {
	ExpenseID string    `json:"expenseId"`
	At        time.Time `json:"at"`
}

// TestTypedToolDecodesDescribesAndRunsNatively: a typed tool gets its input
// decoded, its schemas derived from its types for packd index, and runs
// natively through Invoke with a request built for it.
func TestTypedToolDecodesDescribesAndRunsNatively(t *testing.T) {
	resetRegistry()
	defer resetRegistry()
	TypedTool("acme.record", func(in expense, ctx *Context) (recorded, error) {
		if in.AmountCents < 0 {
			return recorded{}, &Error{Name: "RangeError", Message: "negative"}
		}
		return recorded{ExpenseID: in.Vendor + "-" + ctx.TenantID, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, nil
	}, Version("1.0.0"), Description("Records an expense."))

	out, err := Invoke("acme.record", expense{Vendor: "acme", AmountCents: 5}, &Context{TenantID: "t1", RunID: "r"})
	if err != nil || string(out) != `{"expenseId":"acme-t1","at":"2026-01-02T03:04:05Z"}` {
		t.Fatalf("Invoke = %s, %v", out, err)
	}
	_, err = Invoke("acme.record", map[string]any{"vendor": "x", "amountCents": -1}, nil)
	var ge *Error
	if !errors.As(err, &ge) || ge.Name != "RangeError" {
		t.Fatalf("a throw: %v", err)
	}
	_, err = Invoke("acme.record", map[string]any{"amountCents": "lots"}, nil)
	if !errors.As(err, &ge) || ge.Name != "TypeError" {
		t.Fatalf("input of the wrong type: %v", err)
	}
	if _, err := Invoke("acme.nope", nil, nil); !errors.As(err, &ge) || ge.Name != "NoHandler" {
		t.Fatalf("no handler: %v", err)
	}

	var d struct {
		ToolSpecs []struct {
			ID, Version, Description string
			Input, Output            json.RawMessage
		}
	}
	if err := json.Unmarshal(Describe(), &d); err != nil || len(d.ToolSpecs) != 1 {
		t.Fatalf("Describe: %v %+v", err, d)
	}
	spec := d.ToolSpecs[0]
	if spec.ID != "acme.record" || spec.Version != "1.0.0" || spec.Description != "Records an expense." {
		t.Fatalf("spec %+v", spec)
	}
	wantIn := `{"additionalProperties":false,"properties":{"amountCents":{"type":"integer"},"note":{"type":"string"},"tags":{"items":{"type":"string"},"type":"array"},` +
		`"vendor":{"description":"Who was paid.","type":"string"}},"required":["vendor","amountCents"],"type":"object"}`
	if string(spec.Input) != wantIn {
		t.Errorf("input schema\n%s\nwant\n%s", spec.Input, wantIn)
	}
	wantOut := `{"additionalProperties":false,"properties":{"at":{"format":"date-time","type":"string"},"expenseId":{"type":"string"}},"required":["expenseId","at"],"type":"object"}`
	if string(spec.Output) != wantOut {
		t.Errorf("output schema\n%s\nwant\n%s", spec.Output, wantOut)
	}
}

// TestSchemaOfOverridesAndRecursion: a hand-written schema wins, and a
// recursive type ends.
func TestSchemaOfOverridesAndRecursion(t *testing.T) {
	resetRegistry()
	defer resetRegistry()
	TypedTool("t", func(in map[string]int, _ *Context) ([]byte, error) { return nil, nil }, InputSchema(`{"type":"object"}`))
	if got := toolSpecs["t"]; string(got.Input) != `{"type":"object"}` || string(got.Output) != `{"contentEncoding":"base64","type":"string"}` {
		t.Fatalf("%s %s", got.Input, got.Output)
	}
	type node struct {
		Next *node `json:"next,omitempty"`
	}
	if got := string(SchemaOf(reflect.TypeFor[node]())); got != `{"additionalProperties":false,"properties":{"next":{"type":"object"}},"type":"object"}` {
		t.Fatalf("recursive: %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("InputSchema of text that is not JSON did not panic")
		}
	}()
	InputSchema("{not json")
}

type openInput struct {
	Open
	Name string `json:"name"`
}

type nested struct {
	Inner struct {
		A int `json:"a"`
	} `json:"inner"`
	Open *openInput `json:"open,omitempty"`
}

// TestDerivedObjectsRefuseUnknownPropertiesUnlessOpen: every object schema
// SchemaOf derives from a struct says "additionalProperties": false, nested
// ones too, unless the struct embeds Open; Open is neither written nor
// read by encoding/json.
func TestDerivedObjectsRefuseUnknownPropertiesUnlessOpen(t *testing.T) {
	if got := string(SchemaOf(reflect.TypeFor[openInput]())); got != `{"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}` {
		t.Errorf("open: %s", got)
	}
	want := `{"additionalProperties":false,"properties":{"inner":{"additionalProperties":false,"properties":{"a":{"type":"integer"}},"required":["a"],"type":"object"},` +
		`"open":{"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}},"required":["inner"],"type":"object"}`
	if got := string(SchemaOf(reflect.TypeFor[nested]())); got != want {
		t.Errorf("nested:\n%s\nwant\n%s", got, want)
	}
	b, _ := json.Marshal(openInput{Name: "Ada"})
	var back openInput
	if string(b) != `{"name":"Ada"}` || json.Unmarshal([]byte(`{"name":"Ada","Open":1}`), &back) != nil || back.Name != "Ada" {
		t.Errorf("Open is seen by encoding/json: %s %+v", b, back)
	}
}

type minLength struct {
	MinLength int `json:"minLength,omitempty"`
}

// TestTypedCheckDecodesConfigAndDescribes: a typed check gets its config
// decoded (none sent: the zero value), answers a CheckResult, and
// describes the config schema derived from its type with the options
// given, and nothing it was not given.
func TestTypedCheckDecodesConfigAndDescribes(t *testing.T) {
	resetRegistry()
	defer resetRegistry()
	TypedCheck("acme.checks.min-length", func(c minLength, trace json.RawMessage) (CheckResult, error) {
		var tr struct{ Output string }
		_ = json.Unmarshal(trace, &tr)
		if len(tr.Output) < c.MinLength {
			return CheckResult{Reason: "too short"}, nil
		}
		return CheckResult{Passed: true}, nil
	}, Guardrail("acme.min-length"), Severity("error"), Action(`{"on-violation":"log-only"}`))
	for _, c := range []struct{ req, resp string }{
		{`{"kind":"check-invoke","check":{"id":"acme.checks.min-length"},"config":{"minLength":3},"trace":{"output":"ab"}}`, `{"passed":false,"reason":"too short"}`},
		{`{"kind":"check-invoke","check":{"id":"acme.checks.min-length"},"config":{"minLength":2},"trace":{"output":"ab"}}`, `{"passed":true}`},
		{`{"kind":"check-invoke","check":{"id":"acme.checks.min-length"},"trace":{"output":""}}`, `{"passed":true}`},
	} {
		if status, resp := Dispatch([]byte(c.req)); status != wire.StatusOK || string(resp) != c.resp {
			t.Errorf("%s: %d %s, want %s", c.req, status, resp, c.resp)
		}
	}
	status, resp := Dispatch([]byte(`{"kind":"check-invoke","check":{"id":"acme.checks.min-length"},"config":{"minLength":"3"},"trace":{}}`))
	if status != wire.StatusThrown || !strings.Contains(string(resp), `"name":"TypeError"`) {
		t.Errorf("a config of the wrong type: %d %s", status, resp)
	}
	want := `{"tools":[],"checks":["acme.checks.min-length"],"checkSpecs":[{"id":"acme.checks.min-length","guardrail":"acme.min-length",` +
		`"action":{"on-violation":"log-only"},"severity":"error","configSchema":{"additionalProperties":false,"properties":{"minLength":{"type":"integer"}},"type":"object"}}]}`
	if got := string(Describe()); got != want {
		t.Errorf("Describe\n%s\nwant\n%s", got, want)
	}
}

// TestModuleOptionsReachTheDescription: limits, network and the env names
// a module declares are in its description, for packd index.
func TestModuleOptionsReachTheDescription(t *testing.T) {
	resetRegistry()
	defer resetRegistry()
	Tool("acme.fetch", func(json.RawMessage, *Context) (any, error) { return nil, nil },
		Limits(`{"fuel":1000000}`), Network(`{"kind":"allowlist","hosts":["api.example.com"]}`))
	RequireEnv("ACME_KEY", "ACME_URL")
	OptionalEnv("ACME_DEBUG")
	RequireEnv("ACME_KEY")
	want := `{"tools":["acme.fetch"],"checks":[],"toolSpecs":[{"id":"acme.fetch","limits":{"fuel":1000000},"network":{"kind":"allowlist","hosts":["api.example.com"]}}],` +
		`"env":{"required":["ACME_KEY","ACME_URL"],"optional":["ACME_DEBUG"]}}`
	if got := string(Describe()); got != want {
		t.Errorf("Describe\n%s\nwant\n%s", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Limits of text that is not JSON did not panic")
		}
	}()
	Limits("{")
}

// TestKindgisManifestFieldsReachTheDescription: effects, mutating, needs,
// needsSpec and sandbox of a tool, and a check's guardrail name and scope,
// are in the description, for packd index to write.
func TestKindgisManifestFieldsReachTheDescription(t *testing.T) {
	resetRegistry()
	defer resetRegistry()
	Tool("acme.lookup", func(json.RawMessage, *Context) (any, error) { return nil, nil },
		Effects(`[{"kind":"reads","resource":"db:orders"}]`), Mutating(false), Needs(`[{"name":"tenant"}]`),
		NeedsSpec(`{"env":{"REGION":{"type":"string","default":"eu"}}}`), Sandbox("strict"))
	Check("acme.cites", func(json.RawMessage, json.RawMessage) (any, error) { return CheckResult{Passed: true}, nil },
		Guardrail("acme.answers-cite"), Name("Answers cite"), Scope(`{"when":"always"}`))
	want := `{"tools":["acme.lookup"],"checks":["acme.cites"],"toolSpecs":[{"id":"acme.lookup","effects":[{"kind":"reads","resource":"db:orders"}],"mutating":false,` +
		`"needs":[{"name":"tenant"}],"needsSpec":{"env":{"REGION":{"type":"string","default":"eu"}}},"sandbox":"strict"}],` +
		`"checkSpecs":[{"id":"acme.cites","guardrail":"acme.answers-cite","name":"Answers cite","scope":{"when":"always"}}]}`
	if got := string(Describe()); got != want {
		t.Errorf("Describe\n%s\nwant\n%s", got, want)
	}
}
