package schema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kindgi/packd/internal/ojson"
)

// TestIssuesAreBounded: an instance that fails once per property keeps the
// first MaxIssues issues, in Ajv's order, and counts the rest, through
// nested applicators; a failing branch's uncounted issues never make a
// passing anyOf fail.
func TestIssuesAreBounded(t *testing.T) {
	keys := func(n int, val string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":%s`, i, val)
		}
		return b.String() + "}"
	}
	for _, c := range []struct {
		name, schema, data string
		kept, more         int
		first              string
	}{
		{"unknown keys", `{"type":"object","additionalProperties":false}`, keys(5000, "0"), MaxIssues, 4000, "/k0"},
		{"under the bound", `{"type":"object","additionalProperties":false}`, keys(MaxIssues, "0"), MaxIssues, 0, "/k0"},
		{"in items", `{"type":"array","items":{"type":"object","additionalProperties":false}}`, "[" + keys(700, "0") + "," + keys(700, "0") + "]", MaxIssues, 400, "/0"},
		{"each value", `{"type":"object","additionalProperties":{"type":"string"}}`, keys(2500, "0"), MaxIssues, 1500, "/k0"},
		// anyOf: both branches fail, 3000 issues and the anyOf issue itself
		{"anyOf failing", `{"anyOf":[{"additionalProperties":false},{"additionalProperties":{"type":"string"}}]}`, keys(1500, "0"), MaxIssues, 2001, "/k0"},
		{"anyOf passing", `{"anyOf":[{"additionalProperties":false},{"additionalProperties":{"type":"integer"}}]}`, keys(1500, "0"), 0, 0, ""},
		{"propertyNames", `{"propertyNames":{"maxLength":1}}`, keys(800, "0"), MaxIssues, 600, ""},
	} {
		doc, err := ojson.Decode([]byte(c.schema))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Compile(doc)
		if err != nil {
			t.Fatal(err)
		}
		data, err := ojson.Decode([]byte(c.data))
		if err != nil {
			t.Fatal(err)
		}
		issues, more := s.Validate(data)
		if len(issues) != c.kept || more != c.more {
			t.Errorf("%s: %d issues kept and %d more, want %d and %d", c.name, len(issues), more, c.kept, c.more)
			continue
		}
		if c.first != "" && !strings.HasPrefix(issues[0].InstancePath, c.first) && issues[0].Params != nil {
			if p, _ := issues[0].Params.Get("additionalProperty"); p != "k0" {
				t.Errorf("%s: first issue %+v", c.name, issues[0])
			}
		}
	}
}
