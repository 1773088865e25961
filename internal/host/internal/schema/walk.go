package schema

import (
	"strconv"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/ojson"
)

// The walk: a schema object's keywords in Ajv's order, and the result it
// collects.

// walker evaluates a schema as Ajv 8 does with allErrors, collecting issues in
// Ajv's order and the evaluated properties/items that unevaluated* need.
type walker struct {
	s     *Schema
	depth int
}

type result struct {
	issues   []abi.Issue     // at most MaxIssues
	more     int             // issues past MaxIssues, counted, not kept
	props    map[string]bool // properties evaluated at this instance location
	allProps bool
	items    int // leading items evaluated
	allItems bool
}

func (r *result) ok() bool { return len(r.issues) == 0 && r.more == 0 }

// MaxIssues bounds the issues one validation keeps: an instance can fail
// once for each of its properties and items, and an answer that lists them
// all can be many times the size of the request (a 0.77 MB object of
// unknown keys: 10.8 MB of issues). The rest are counted.
const MaxIssues = 1000

// include adds o's issues to r's (not what o evaluated).
func (r *result) include(o result) {
	n := min(len(o.issues), MaxIssues-len(r.issues))
	r.issues = append(r.issues, o.issues[:n]...)
	r.more += len(o.issues) - n + o.more
}

// push adds one issue.
func (r *result) push(is abi.Issue) {
	if len(r.issues) >= MaxIssues {
		r.more++
		return
	}
	r.issues = append(r.issues, is)
}

func (r *result) merge(o result) {
	r.include(o)
	r.mergeEvaluated(o)
}

func (r *result) mergeEvaluated(o result) {
	if o.allProps {
		r.allProps = true
	}
	for k := range o.props {
		r.markProp(k)
	}
	if o.allItems {
		r.allItems = true
	}
	r.items = max(r.items, o.items)
}

func (r *result) markProp(k string) {
	if r.props == nil {
		r.props = map[string]bool{}
	}
	r.props[k] = true
}

// params builds an issue's params object from key, value pairs.
func params(kv ...any) *ojson.Object {
	o := &ojson.Object{}
	for i := 0; i < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

func (r *result) add(ip, sp, keyword string, p *ojson.Object, msg string) {
	if len(r.issues) >= MaxIssues {
		r.more++
		return
	}
	r.issues = append(r.issues, abi.Issue{InstancePath: ip, SchemaPath: sp + "/" + keyword, Keyword: keyword, Params: p, Message: msg})
}

func num(f float64) string { return ojson.FormatNumber(f) }

const maxDepth = 256

func (w *walker) validate(schema any, sp string, data any, ip string) (r result) {
	switch sch := schema.(type) {
	case bool:
		if !sch {
			r.add(ip, sp, "false schema", params(), "boolean schema is false")
		}
		return r
	case *ojson.Object:
		if w.depth > maxDepth {
			r.add(ip, sp, "$ref", params(), "schema recursion too deep")
			return r
		}
		w.depth++
		defer func() { w.depth-- }()
		w.keywords(sch, sp, data, ip, &r)
	}
	return r
}

func (w *walker) keywords(sch *ojson.Object, sp string, data any, ip string, r *result) {
	get := func(k string) (any, bool) { return sch.Get(k) }

	// Ajv checks the type first, except when the schema names one type
	// that has keywords of its own here: then the type error comes where
	// that type's keywords would run, after the keywords of any type
	// (Ajv's coerceAndCheckDataType and schemaKeywords).
	deferred := ""
	if t, ok := get("type"); ok && !typeMatches(t, data) {
		if ts, isStr := t.(string); isStr && hasKeywordsOf(sch, ts) {
			deferred = ts
		} else {
			r.add(ip, sp, "type", params("type", t), "must be "+typeText(t))
		}
	}
	for _, k := range []string{"$ref", "$dynamicRef"} {
		if ref, ok := get(k); ok {
			if target, path, ok := w.resolve(ref); ok {
				r.merge(w.validate(target, path, data, ip))
			}
		}
	}
	if c, ok := get("const"); ok && !ojson.Equal(c, data) {
		r.add(ip, sp, "const", params("allowedValue", c), "must be equal to constant")
	}
	if e, ok := get("enum"); ok {
		if vals, ok := e.([]any); ok && !inEnum(vals, data) {
			r.add(ip, sp, "enum", params("allowedValues", e), "must be equal to one of the allowed values")
		}
	}
	if n, ok := get("not"); ok {
		if sub := w.validate(n, sp+"/not", data, ip); sub.ok() {
			r.add(ip, sp, "not", params(), "must NOT be valid")
		}
	}
	if a, ok := get("anyOf"); ok {
		w.anyOf(a, sp, data, ip, r)
	}
	if a, ok := get("oneOf"); ok {
		w.oneOf(a, sp, data, ip, r)
	}
	if a, ok := get("allOf"); ok {
		if subs, ok := a.([]any); ok {
			for i, s := range subs {
				r.merge(w.validate(s, sp+"/allOf/"+strconv.Itoa(i), data, ip))
			}
		}
	}
	if cond, ok := get("if"); ok {
		w.ifThenElse(sch, cond, sp, data, ip, r)
	}

	// The keywords of each type, in Ajv's order of types; those of the
	// data's own type run, and a deferred type error takes its type's place.
	for _, group := range typeGroups {
		if group == deferred {
			t, _ := get("type")
			r.add(ip, sp, "type", params("type", t), "must be "+typeText(t))
		}
		switch d := data.(type) {
		case float64:
			if group == "number" {
				w.numberKeywords(sch, sp, d, ip, r)
			}
		case string:
			if group == "string" {
				w.stringKeywords(sch, sp, d, ip, r)
			}
		case []any:
			if group == "array" {
				w.arrayKeywords(sch, sp, d, ip, r)
				w.unevaluatedItems(sch, sp, d, ip, r)
			}
		case *ojson.Object:
			if group == "object" {
				w.objectKeywords(sch, sp, d, ip, r)
				w.unevaluatedProperties(sch, sp, d, ip, r)
			}
		}
	}
}

// typeGroups are the types with keywords of their own, in Ajv's order.
var typeGroups = []string{"number", "string", "array", "object"}

// groupKeywords are each type's keywords (Ajv 2020's RULES).
var groupKeywords = map[string][]string{
	"number": {"maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf", "format"},
	"string": {"maxLength", "minLength", "pattern", "format", "formatMaximum", "formatMinimum", "formatExclusiveMaximum", "formatExclusiveMinimum"},
	"array":  {"maxItems", "minItems", "prefixItems", "items", "contains", "uniqueItems", "maxContains", "minContains", "unevaluatedItems"},
	"object": {"maxProperties", "minProperties", "required", "propertyNames", "additionalProperties", "dependencies",
		"properties", "patternProperties", "dependentRequired", "dependentSchemas", "unevaluatedProperties"},
}

// hasKeywordsOf reports whether the schema has a keyword of the type's own.
func hasKeywordsOf(sch *ojson.Object, t string) bool {
	for _, k := range groupKeywords[t] {
		if _, ok := sch.Get(k); ok {
			return true
		}
	}
	return false
}
