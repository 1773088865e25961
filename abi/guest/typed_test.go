package guest

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
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
	wantIn := `{"properties":{"amountCents":{"type":"integer"},"note":{"type":"string"},"tags":{"items":{"type":"string"},"type":"array"},` +
		`"vendor":{"description":"Who was paid.","type":"string"}},"required":["vendor","amountCents"],"type":"object"}`
	if string(spec.Input) != wantIn {
		t.Errorf("input schema\n%s\nwant\n%s", spec.Input, wantIn)
	}
	wantOut := `{"properties":{"at":{"format":"date-time","type":"string"},"expenseId":{"type":"string"}},"required":["expenseId","at"],"type":"object"}`
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
	if got := string(SchemaOf(reflect.TypeFor[node]())); got != `{"properties":{"next":{"type":"object"}},"type":"object"}` {
		t.Fatalf("recursive: %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("InputSchema of text that is not JSON did not panic")
		}
	}()
	InputSchema("{not json")
}
