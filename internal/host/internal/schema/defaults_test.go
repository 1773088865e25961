package schema

import (
	"testing"

	"github.com/kindgi/packd/internal/ojson"
)

func TestFillDefaults(t *testing.T) {
	cases := []struct{ name, schema, in, want string }{
		{"conformance.defaults",
			`{"type":"object","properties":{"name":{"type":"string"},"greeting":{"type":"string","default":"Hello"},"options":{"type":"object","properties":{"loud":{"type":"boolean","default":false}},"default":{}}},"required":["name"]}`,
			`{"name":"Ada"}`, `{"name":"Ada","greeting":"Hello","options":{"loud":false}}`},
		{"present values are kept", `{"properties":{"a":{"default":1}}}`, `{"a":null}`, `{"a":null}`},
		{"allOf and local $ref",
			`{"$defs":{"d":{"properties":{"x":{"default":"X"}}}},"allOf":[{"properties":{"y":{"default":"Y"}}}],"$ref":"#/$defs/d"}`,
			`{}`, `{"x":"X","y":"Y"}`},
		{"array items", `{"items":{"properties":{"n":{"default":0}}}}`, `[{},{"n":5}]`, `[{"n":0},{"n":5}]`},
		{"anyOf is ignored", `{"anyOf":[{"properties":{"a":{"default":1}}}]}`, `{}`, `{}`},
		{"not an object", `{"properties":{"a":{"default":1}}}`, `"s"`, `"s"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, _ := ojson.Decode([]byte(c.schema))
			s, err := Compile(doc)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := ojson.Decode([]byte(c.in))
			s.FillDefaults(data)
			if got := string(ojson.Encode(data)); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestCompileRefusesRemoteRef(t *testing.T) {
	doc, _ := ojson.Decode([]byte(`{"$ref":"https://example.com/s.json"}`))
	if _, err := Compile(doc); err == nil {
		t.Fatal("a remote $ref compiled")
	}
	doc, _ = ojson.Decode([]byte(`{"type":"nonsense"}`))
	if _, err := Compile(doc); err == nil {
		t.Fatal("an invalid schema compiled")
	}
}

func TestFilledDefaultsAreCopies(t *testing.T) {
	doc, _ := ojson.Decode([]byte(`{"properties":{"a":{"default":{"k":[1]}}}}`))
	s, err := Compile(doc)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := ojson.Decode([]byte(`{}`))
	s.FillDefaults(first)
	a, _ := first.(*ojson.Object).Get("a")
	a.(*ojson.Object).Set("k", "changed by a handler")
	second, _ := ojson.Decode([]byte(`{}`))
	s.FillDefaults(second)
	if got := string(ojson.Encode(second)); got != `{"a":{"k":[1]}}` {
		t.Fatalf("a default changed by one call leaked into the next: %s", got)
	}
}
