package schema

import (
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

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
	issues, _ := s.Validate(data)
	var got []string
	for _, is := range issues {
		got = append(got, is.InstancePath+" "+is.Keyword)
	}
	want := []string{" enum", "/pattern format", "/tags/1 pattern", "/code pattern", "/x-n type"}
	if !slices.Equal(got, want) {
		t.Fatalf("issues %q, want %q", got, want)
	}
}

// TestCompileErrorsSpeakTheSchemasTerms: an invalid schema is reported at
// its JSON Pointer, without the internal URL it is compiled under.
func TestCompileErrorsSpeakTheSchemasTerms(t *testing.T) {
	for doc, want := range map[string]string{
		`{"properties":{"a":{"type":"nonsense"}}}`: "not a valid JSON Schema (draft 2020-12): at /properties/a/type: value must be one of 'array'",
		`{"minLength":-1}`:                         "at /minLength: ",
		`{"$ref":"#/$defs/missing"}`:               "#/$defs/missing",
	} {
		v, _ := ojson.Decode([]byte(doc))
		_, err := Compile(v)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "mem://") {
			t.Errorf("Compile(%s) = %v, want it to say %q and no mem:// URL", doc, err, want)
		}
	}
}

// TestFallbackIssuesWordEveryKind: v6's own errors, when they are shown,
// are worded with a printer (a nil one panics on kinds such as enum).
func TestFallbackIssuesWordEveryKind(t *testing.T) {
	err := &jsonschema.ValidationError{ErrorKind: &kind.Enum{Got: "x", Want: []any{"a", "b"}}, InstanceLocation: []string{"k"}}
	issues, _ := fallbackIssues(err)
	if len(issues) != 1 || issues[0].InstancePath != "/k" || !strings.Contains(issues[0].Message, "a") {
		t.Fatalf("%+v", issues)
	}
}
