package schema

import (
	"os"
	"testing"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/ojson"
)

func readOrdered(t *testing.T, path string) []any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ojson.Decode(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v.([]any)
}

func field(v any, k string) any {
	x, _ := v.(*ojson.Object).Get(k)
	return x
}

// TestAjvGolden compares the issues of every case in testdata/ajv/cases.json,
// key for key and in order, with what real Ajv 2020 (allErrors) reported for
// it (testdata/ajv/golden.json; `make ajv-golden` regenerates it).
func TestAjvGolden(t *testing.T) {
	cases := readOrdered(t, "../../../../testdata/ajv/cases.json")
	golden := readOrdered(t, "../../../../testdata/ajv/golden.json")
	if len(cases) != len(golden) || len(cases) < 30 {
		t.Fatalf("%d cases, %d golden answers: regenerate with make ajv-golden", len(cases), len(golden))
	}
	for i, c := range cases {
		name := field(c, "name").(string)
		t.Run(name, func(t *testing.T) {
			g := golden[i]
			if field(g, "name") != name {
				t.Fatalf("golden entry %d is %v: regenerate with make ajv-golden", i, field(g, "name"))
			}
			s, err := Compile(field(c, "schema"))
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			issues, _ := s.Validate(field(c, "data"))
			want := ojson.Encode(field(g, "errors"))
			got := ojson.Encode(issueValues(issues))
			if string(got) != string(want) {
				t.Errorf("issues differ from Ajv\n got: %s\nwant: %s", got, want)
			}
			if valid := field(g, "valid").(bool); valid != (issues == nil) {
				t.Errorf("valid = %v, Ajv says %v", issues == nil, valid)
			}
		})
	}
}

func issueValues(issues []abi.Issue) []any {
	out := []any{}
	for _, is := range issues {
		out = append(out, is.Value())
	}
	return out
}
