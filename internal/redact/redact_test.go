package redact

import (
	"strings"
	"testing"
)

// TestEveryFormIsFound: a secret written as it is, inside a JSON string
// (JavaScript's and Go's escaping) or percent-encoded (query or path) is
// found and replaced wherever it is, and a secret shorter than the
// minimum is not looked for.
func TestEveryFormIsFound(t *testing.T) {
	const v = `t0k/en+1 "<&>"`
	var kinds []string
	for _, f := range Forms(v) {
		kinds = append(kinds, f.Kind)
	}
	if got := strings.Join(kinds, " "); got != "raw json json-html url url-path" {
		t.Fatalf("forms %s", got)
	}
	var s Set
	s.Add("tok", v, 4)
	s.Add("short", "abc", 4)
	text := `raw t0k/en+1 "<&>" json t0k/en+1 \"<&>\" go t0k/en+1 \"\u003c\u0026\u003e\" ` +
		`query t0k%2Fen%2B1+%22%3C%26%3E%22 path t0k%2Fen+1%20%22%3C&%3E%22 abc`
	got := s.String(text, "#")
	if want := `raw # json # go # query # path # abc`; got != want {
		t.Fatalf("replaced:\n%s\nwant\n%s", got, want)
	}
	var at []int
	b := []byte(text)
	s.Each(b, func(i int, name string, f Form) bool {
		at = append(at, i)
		for j := range f.Text {
			b[i+j] = '*'
		}
		return true
	})
	if len(at) != 5 || strings.Contains(string(b), "t0k") {
		t.Fatalf("found at %v: %s", at, b)
	}
	if (&Set{}).String("x", "#") != "x" || !(*Set)(nil).Empty() {
		t.Fatal("an empty set changed its input")
	}
}
