package schema

import (
	"slices"
	"testing"

	"github.com/kindgi/packd/internal/ojson"
)

// TestPatternsAndFormatsAreTheSchemas: every pattern and format a schema
// names, however deep, is compiled once with it and kept by it alone (they
// were kept in process-wide maps that only grew), and a pattern or format
// the walk meets is always one of them.
func TestPatternsAndFormatsAreTheSchemas(t *testing.T) {
	doc, err := ojson.Decode([]byte(`{
		"$defs": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
		"type": "object",
		"properties": {
			"pattern": {"type": "string", "format": "email"},
			"tags": {"type": "array", "items": {"pattern": "^#", "format": "no-such-format"}},
			"code": {"$ref": "#/$defs/code"}
		},
		"patternProperties": {"^x-": {"type": "integer"}},
		"enum": [{"pattern": "not-a-schema"}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Compile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var patterns, formats []string
	for p, re := range s.patterns {
		if re == nil {
			t.Fatalf("pattern %q did not compile", p)
		}
		patterns = append(patterns, p)
	}
	for f := range s.formats {
		formats = append(formats, f)
	}
	slices.Sort(patterns)
	slices.Sort(formats)
	if want := []string{"^#", "^[A-Z]{3}$", "^x-"}; !slices.Equal(patterns, want) {
		t.Fatalf("patterns %q, want %q", patterns, want)
	}
	if want := []string{"email", "no-such-format"}; !slices.Equal(formats, want) {
		t.Fatalf("formats %q, want %q", formats, want)
	}

	data, _ := ojson.Decode([]byte(`{"pattern": "nobody", "tags": ["#a", "b"], "code": "abc", "x-n": 1.5}`))
	issues := s.Validate(data)
	var got []string
	for _, is := range issues {
		got = append(got, is.InstancePath+" "+is.Keyword)
	}
	want := []string{" enum", "/pattern format", "/tags/1 pattern", "/code pattern", "/x-n type"}
	if !slices.Equal(got, want) {
		t.Fatalf("issues %q, want %q", got, want)
	}
}
