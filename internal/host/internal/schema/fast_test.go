package schema

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/ojson"
)

// TestFastPathNeverAcceptsWhatTheValidatorRefuses: over random schemas of
// the fast path's keywords and random instances, every instance the fast
// path calls valid the full validation (santhosh-tekuri/jsonschema) calls
// valid too; and the fast path decides the common valid instances alone
// (it is not a path that never answers).
func TestFastPathNeverAcceptsWhatTheValidatorRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 7))
	decided := 0
	for range 3000 {
		doc := decode(t, randomFastSchema(r, 0))
		s, err := Compile(doc)
		if err != nil {
			continue // a schema the validator refuses (a duplicate type)
		}
		if s.fast == nil {
			t.Fatalf("%s: no fast path", ojson.Encode(doc))
		}
		for range 20 {
			v := decode(t, randomInstance(r, 0))
			if !s.fast.valid(v) {
				continue
			}
			decided++
			if err := s.compiled.Validate(ojson.Plain(v)); err != nil {
				t.Fatalf("schema %s, instance %s: the fast path says valid, the validator %v", ojson.Encode(doc), ojson.Encode(v), err)
			}
		}
	}
	if decided < 5000 {
		t.Fatalf("the fast path decided %d instances of 60,000", decided)
	}
}

// TestFastPathLeavesTheRestToTheValidator: a schema with any other keyword,
// or another form of one it knows, has no fast path; an instance it does
// not accept is decided (and its issues worded) by the full validation.
func TestFastPathLeavesTheRestToTheValidator(t *testing.T) {
	for _, src := range []string{
		`{"type":"object","properties":{"a":{"type":"string","format":"email"}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"string","pattern":"^a"}`, `{"enum":[1]}`, `{"$ref":"#/$defs/a","$defs":{"a":{}}}`,
		`{"type":"array","items":{"type":"string"}}`, `{"properties":{"a":true}}`, `{"const":"a"}`,
		`{"properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`, `{"not":{}}`,
	} {
		s, err := Compile(decode(t, src))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if s.fast != nil {
			t.Errorf("%s has a fast path", src)
		}
	}
	s, err := Compile(decode(t, `{"type":"object","properties":{"message":{"type":"string","minLength":1}},"required":["message"],"additionalProperties":false}`))
	if err != nil || s.fast == nil {
		t.Fatalf("the common schema has no fast path (%v)", err)
	}
	for in, want := range map[string]string{
		`{"message":"hi"}`:          "",
		`{"message":""}`:            "minLength",
		`{}`:                        "required",
		`{"message":"hi","x":1}`:    "additionalProperties",
		`{"message":1}`:             "type",
		`{"message":"\ud800"}`:      "", // a lone surrogate: the validator decides
		`{"message":"` + "é" + `"}`: "",
	} {
		issues, _ := s.Validate(decode(t, in))
		got := ""
		if len(issues) > 0 {
			got = issues[0].Keyword
		}
		if got != want {
			t.Errorf("%s: %v, want %q", in, issues, want)
		}
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := ojson.Decode([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

var fastTypes = []string{"null", "boolean", "object", "array", "number", "integer", "string"}

func randomFastSchema(r *rand.Rand, depth int) string {
	var parts []string
	if r.IntN(4) > 0 {
		if r.IntN(3) == 0 {
			a, b := fastTypes[r.IntN(7)], fastTypes[r.IntN(7)]
			parts = append(parts, fmt.Sprintf(`"type":[%q,%q]`, a, b))
		} else {
			parts = append(parts, fmt.Sprintf(`"type":%q`, fastTypes[r.IntN(7)]))
		}
	}
	if depth < 3 && r.IntN(2) == 0 {
		var props []string
		for i := range r.IntN(4) {
			props = append(props, fmt.Sprintf(`"p%d":%s`, i, randomFastSchema(r, depth+1)))
		}
		parts = append(parts, `"properties":{`+strings.Join(props, ",")+`}`)
	}
	if r.IntN(3) == 0 {
		parts = append(parts, fmt.Sprintf(`"required":["p%d","p%d"]`, r.IntN(4), r.IntN(4)))
	}
	if r.IntN(3) == 0 {
		parts = append(parts, fmt.Sprintf(`"additionalProperties":%v`, r.IntN(2) == 0))
	}
	if r.IntN(3) == 0 {
		parts = append(parts, fmt.Sprintf(`"minLength":%d`, r.IntN(4)))
	}
	if r.IntN(3) == 0 {
		parts = append(parts, fmt.Sprintf(`"maxLength":%d`, r.IntN(4)))
	}
	if r.IntN(4) == 0 {
		parts = append(parts, `"description":"d","default":1`)
	}
	if depth == 0 && r.IntN(4) == 0 {
		parts = append(parts, `"$schema":"http://json-schema.org/draft-07/schema#"`)
	}
	r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return "{" + strings.Join(parts, ",") + "}"
}

func randomInstance(r *rand.Rand, depth int) string {
	switch k := r.IntN(9); {
	case k == 0:
		return "null"
	case k == 1:
		return []string{"true", "false"}[r.IntN(2)]
	case k == 2:
		return []string{"0", "1", "-2", "1.5", "1.0", "1e300", "1e400", "-0", "12345678901234567890"}[r.IntN(9)]
	case k <= 4:
		return []string{`""`, `"a"`, `"ab"`, `"abc"`, `"abcd"`, `"é"`, `"éé"`, `"\ud800"`, `"😀😀"`, `"a\u0000"`}[r.IntN(10)]
	case k == 5 && depth < 3:
		return "[" + randomInstance(r, depth+1) + "]"
	case depth < 3:
		var members []string
		for range r.IntN(5) {
			members = append(members, fmt.Sprintf(`"p%d":%s`, r.IntN(5), randomInstance(r, depth+1)))
		}
		return "{" + strings.Join(members, ",") + "}"
	}
	return "{}"
}

// TestFastPathIsLinearInTheInstance: a schema of 4,000 properties and an
// instance of 300,000 keys (a caller chooses how many it sends) is
// decided in one look per key: with the properties searched in turn, it
// took seconds (1.2e9 comparisons).
func TestFastPathIsLinearInTheInstance(t *testing.T) {
	var schema, inst strings.Builder
	schema.WriteString(`{"type":"object","properties":{`)
	for i := range 4000 {
		if i > 0 {
			schema.WriteByte(',')
		}
		fmt.Fprintf(&schema, `"key%07d":{"type":"integer"}`, i)
	}
	schema.WriteString(`}}`)
	inst.WriteByte('{')
	for i := range 300_000 {
		if i > 0 {
			inst.WriteByte(',')
		}
		fmt.Fprintf(&inst, `"key%07d":1`, 4000+i) // none a property, each as long as one
	}
	inst.WriteByte('}')
	s, err := Compile(decode(t, schema.String()))
	if err != nil || s.fast == nil {
		t.Fatalf("no fast path (%v)", err)
	}
	v := decode(t, inst.String())
	start := time.Now()
	if issues, _ := s.Validate(v); issues != nil {
		t.Fatal(issues)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("%v to validate 300,000 keys", d)
	}
}
