package schema

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/ojson"
)

// walker evaluates a schema as Ajv 8 does with allErrors, collecting issues in
// Ajv's order and the evaluated properties/items that unevaluated* need.
type walker struct {
	s     *Schema
	depth int
}

type result struct {
	issues   []abi.Issue
	props    map[string]bool // properties evaluated at this instance location
	allProps bool
	items    int // leading items evaluated
	allItems bool
}

func (r *result) ok() bool { return len(r.issues) == 0 }

func (r *result) merge(o result) {
	r.issues = append(r.issues, o.issues...)
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

func obj(kv ...any) *ojson.Object {
	o := &ojson.Object{}
	for i := 0; i < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

func (r *result) add(ip, sp, keyword string, params *ojson.Object, msg string) {
	r.issues = append(r.issues, abi.Issue{InstancePath: ip, SchemaPath: sp + "/" + keyword, Keyword: keyword, Params: params, Message: msg})
}

func num(f float64) string { return ojson.FormatNumber(f) }

const maxDepth = 256

func (w *walker) validate(schema any, sp string, data any, ip string) (r result) {
	switch sch := schema.(type) {
	case bool:
		if !sch {
			r.add(ip, sp, "false schema", obj(), "boolean schema is false")
		}
		return r
	case *ojson.Object:
		if w.depth > maxDepth {
			r.add(ip, sp, "$ref", obj(), "schema recursion too deep")
			return r
		}
		w.depth++
		defer func() { w.depth-- }()
		w.object(sch, sp, data, ip, &r)
	}
	return r
}

func (w *walker) object(sch *ojson.Object, sp string, data any, ip string, r *result) {
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
			r.add(ip, sp, "type", obj("type", t), "must be "+typeText(t))
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
		r.add(ip, sp, "const", obj("allowedValue", c), "must be equal to constant")
	}
	if e, ok := get("enum"); ok {
		if vals, ok := e.([]any); ok && !contains(vals, data) {
			r.add(ip, sp, "enum", obj("allowedValues", e), "must be equal to one of the allowed values")
		}
	}
	if n, ok := get("not"); ok {
		if sub := w.validate(n, sp+"/not", data, ip); sub.ok() {
			r.add(ip, sp, "not", obj(), "must NOT be valid")
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
			r.add(ip, sp, "type", obj("type", t), "must be "+typeText(t))
		}
		switch d := data.(type) {
		case float64:
			if group == "number" {
				w.number(sch, sp, d, ip, r)
			}
		case string:
			if group == "string" {
				w.str(sch, sp, d, ip, r)
			}
		case []any:
			if group == "array" {
				w.array(sch, sp, d, ip, r)
				w.unevaluatedItems(sch, sp, d, ip, r)
			}
		case *ojson.Object:
			if group == "object" {
				w.obj(sch, sp, d, ip, r)
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

func (w *walker) unevaluatedProperties(sch *ojson.Object, sp string, d *ojson.Object, ip string, r *result) {
	u, ok := sch.Get("unevaluatedProperties")
	if !ok || r.allProps {
		return
	}
	for i, k := range d.Keys {
		if r.props[k] {
			continue
		}
		if b, isBool := u.(bool); isBool && !b {
			r.add(ip, sp, "unevaluatedProperties", obj("unevaluatedProperty", k), "must NOT have unevaluated properties")
		} else {
			r.issues = append(r.issues, w.validate(u, sp+"/unevaluatedProperties", d.Vals[i], ip+"/"+escapePointer(k)).issues...)
		}
	}
	r.allProps = true
}

func (w *walker) unevaluatedItems(sch *ojson.Object, sp string, d []any, ip string, r *result) {
	u, ok := sch.Get("unevaluatedItems")
	if !ok || r.allItems {
		return
	}
	if b, isBool := u.(bool); isBool && !b {
		if len(d) > r.items {
			r.add(ip, sp, "unevaluatedItems", obj("limit", float64(r.items)), "must NOT have more than "+strconv.Itoa(r.items)+" items")
		}
	} else {
		for i := r.items; i < len(d); i++ {
			r.issues = append(r.issues, w.validate(u, sp+"/unevaluatedItems", d[i], ip+"/"+strconv.Itoa(i)).issues...)
		}
	}
	r.allItems = true
}

func (w *walker) anyOf(a any, sp string, data any, ip string, r *result) {
	subs, ok := a.([]any)
	if !ok {
		return
	}
	var failed []abi.Issue
	passed := false
	for i, s := range subs {
		sub := w.validate(s, sp+"/anyOf/"+strconv.Itoa(i), data, ip)
		if sub.ok() {
			passed = true
			r.mergeEvaluated(sub)
		} else {
			failed = append(failed, sub.issues...)
		}
	}
	if !passed {
		r.issues = append(r.issues, failed...)
		r.add(ip, sp, "anyOf", obj(), "must match a schema in anyOf")
	}
}

func (w *walker) oneOf(a any, sp string, data any, ip string, r *result) {
	subs, ok := a.([]any)
	if !ok {
		return
	}
	var failed []abi.Issue
	var passing []int
	var passRes result
	for i, s := range subs {
		sub := w.validate(s, sp+"/oneOf/"+strconv.Itoa(i), data, ip)
		if sub.ok() {
			passing = append(passing, i)
			passRes = sub
			if len(passing) == 2 {
				break
			}
		} else {
			failed = append(failed, sub.issues...)
		}
	}
	switch len(passing) {
	case 0:
		r.issues = append(r.issues, failed...)
		r.add(ip, sp, "oneOf", obj("passingSchemas", nil), "must match exactly one schema in oneOf")
	case 1:
		r.mergeEvaluated(passRes)
	default:
		r.add(ip, sp, "oneOf", obj("passingSchemas", []any{float64(passing[0]), float64(passing[1])}), "must match exactly one schema in oneOf")
	}
}

func (w *walker) ifThenElse(sch *ojson.Object, cond any, sp string, data any, ip string, r *result) {
	c := w.validate(cond, sp+"/if", data, ip)
	branch := "else"
	if c.ok() {
		branch = "then"
		r.mergeEvaluated(c)
	}
	s, ok := sch.Get(branch)
	if !ok {
		return
	}
	sub := w.validate(s, sp+"/"+branch, data, ip)
	if sub.ok() {
		r.mergeEvaluated(sub)
		return
	}
	r.issues = append(r.issues, sub.issues...)
	r.add(ip, sp, "if", obj("failingKeyword", branch), `must match "`+branch+`" schema`)
}

// resolve finds a local $ref target: "#", "#/json/pointer" or "#anchor", and
// the schema path Ajv reports below it: the ref as written when Ajv inlines
// the target (it holds no ref of its own), else "#", since Ajv compiles such a
// target as a function of its own whose paths start afresh.
func (w *walker) resolve(ref any) (any, string, bool) {
	node, path, ok := w.find(ref)
	if ok && hasRef(node) {
		path = "#"
	}
	return node, path, ok
}

var refKeywords = map[string]bool{"$ref": true, "$recursiveRef": true, "$recursiveAnchor": true, "$dynamicRef": true, "$dynamicAnchor": true}

// hasRef mirrors Ajv's test for whether a referenced schema can be inlined.
func hasRef(node any) bool {
	switch n := node.(type) {
	case *ojson.Object:
		for i, k := range n.Keys {
			if refKeywords[k] || hasRef(n.Vals[i]) {
				return true
			}
		}
	case []any:
		for _, e := range n {
			if hasRef(e) {
				return true
			}
		}
	}
	return false
}

func (w *walker) find(ref any) (any, string, bool) {
	s, ok := ref.(string)
	if !ok {
		return nil, "", false
	}
	frag, found := strings.CutPrefix(s, "#")
	if !found {
		return nil, "", false
	}
	if frag == "" {
		return w.s.doc, "#", true
	}
	if !strings.HasPrefix(frag, "/") {
		a, ok := w.s.anchors[frag]
		return a.node, s, ok
	}
	node := w.s.doc
	for _, seg := range strings.Split(frag[1:], "/") {
		seg = percentDecode(seg)
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case *ojson.Object:
			v, ok := n.Get(seg)
			if !ok {
				return nil, "", false
			}
			node = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n) {
				return nil, "", false
			}
			node = n[i]
		default:
			return nil, "", false
		}
	}
	return node, s, true
}

func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func numberOf(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

func (w *walker) number(sch *ojson.Object, sp string, d float64, ip string, r *result) {
	for _, c := range []struct {
		kw, cmp string
		fail    func(d, lim float64) bool
	}{
		{"maximum", "<=", func(d, l float64) bool { return d > l }},
		{"minimum", ">=", func(d, l float64) bool { return d < l }},
		{"exclusiveMaximum", "<", func(d, l float64) bool { return d >= l }},
		{"exclusiveMinimum", ">", func(d, l float64) bool { return d <= l }},
	} {
		if v, ok := sch.Get(c.kw); ok {
			if lim, ok := numberOf(v); ok && c.fail(d, lim) {
				r.add(ip, sp, c.kw, obj("comparison", c.cmp, "limit", lim), "must be "+c.cmp+" "+num(lim))
			}
		}
	}
	if v, ok := sch.Get("multipleOf"); ok {
		if m, ok := numberOf(v); ok && m != 0 {
			q := d / m
			if q != math.Trunc(q) {
				r.add(ip, sp, "multipleOf", obj("multipleOf", m), "must be multiple of "+num(m))
			}
		}
	}
}

func (w *walker) str(sch *ojson.Object, sp string, d string, ip string, r *result) {
	n := utf8.RuneCountInString(d)
	if v, ok := sch.Get("maxLength"); ok {
		if lim, ok := numberOf(v); ok && float64(n) > lim {
			r.add(ip, sp, "maxLength", obj("limit", lim), "must NOT have more than "+num(lim)+" characters")
		}
	}
	if v, ok := sch.Get("minLength"); ok {
		if lim, ok := numberOf(v); ok && float64(n) < lim {
			r.add(ip, sp, "minLength", obj("limit", lim), "must NOT have fewer than "+num(lim)+" characters")
		}
	}
	if v, ok := sch.Get("pattern"); ok {
		if p, ok := v.(string); ok {
			if re := compileRegexp(p); re != nil && !re.MatchString(d) {
				r.add(ip, sp, "pattern", obj("pattern", p), `must match pattern "`+p+`"`)
			}
		}
	}
	if v, ok := sch.Get("format"); ok {
		if f, ok := v.(string); ok && !formatOK(f, d) {
			r.add(ip, sp, "format", obj("format", f), `must match format "`+f+`"`)
		}
	}
}

func (w *walker) array(sch *ojson.Object, sp string, d []any, ip string, r *result) {
	if v, ok := sch.Get("maxItems"); ok {
		if lim, ok := numberOf(v); ok && float64(len(d)) > lim {
			r.add(ip, sp, "maxItems", obj("limit", lim), "must NOT have more than "+num(lim)+" items")
		}
	}
	if v, ok := sch.Get("minItems"); ok {
		if lim, ok := numberOf(v); ok && float64(len(d)) < lim {
			r.add(ip, sp, "minItems", obj("limit", lim), "must NOT have fewer than "+num(lim)+" items")
		}
	}
	start, prefixed := 0, false
	if v, ok := sch.Get("prefixItems"); ok {
		if subs, ok := v.([]any); ok {
			prefixed = true
			start = len(subs)
			for i := 0; i < len(subs) && i < len(d); i++ {
				r.issues = append(r.issues, w.validate(subs[i], sp+"/prefixItems/"+strconv.Itoa(i), d[i], ip+"/"+strconv.Itoa(i)).issues...)
			}
			r.items = max(r.items, min(start, len(d)))
		}
	}
	if v, ok := sch.Get("items"); ok {
		// Ajv reports "items": false as a limit only after prefixItems;
		// alone, every item fails the false schema.
		if b, isBool := v.(bool); isBool && !b && prefixed {
			if len(d) > start {
				r.add(ip, sp, "items", obj("limit", float64(start)), "must NOT have more than "+strconv.Itoa(start)+" items")
			}
		} else {
			for i := start; i < len(d); i++ {
				r.issues = append(r.issues, w.validate(v, sp+"/items", d[i], ip+"/"+strconv.Itoa(i)).issues...)
			}
		}
		r.allItems = true
	}
	if v, ok := sch.Get("contains"); ok {
		w.contains(sch, v, sp, d, ip, r)
	}
	if v, ok := sch.Get("uniqueItems"); ok && v == true {
		w.unique(sch, sp, d, ip, r)
	}
}

func (w *walker) contains(sch *ojson.Object, c any, sp string, d []any, ip string, r *result) {
	minC, maxC := 1.0, math.Inf(1)
	if v, ok := sch.Get("minContains"); ok {
		if f, ok := numberOf(v); ok {
			minC = f
		}
	}
	hasMax := false
	if v, ok := sch.Get("maxContains"); ok {
		if f, ok := numberOf(v); ok {
			maxC, hasMax = f, true
		}
	}
	if minC == 0 && !hasMax {
		return
	}
	var failed []abi.Issue
	count := 0.0
	for i, e := range d {
		sub := w.validate(c, sp+"/contains", e, ip+"/"+strconv.Itoa(i))
		if sub.ok() {
			count++
		} else {
			failed = append(failed, sub.issues...)
		}
	}
	if count >= minC && count <= maxC {
		return
	}
	r.issues = append(r.issues, failed...)
	if hasMax {
		r.add(ip, sp, "contains", obj("minContains", minC, "maxContains", maxC),
			"must contain at least "+num(minC)+" and no more than "+num(maxC)+" valid item(s)")
	} else {
		r.add(ip, sp, "contains", obj("minContains", minC), "must contain at least "+num(minC)+" valid item(s)")
	}
}

// unique reproduces Ajv's two scans: with scalar item types declared under
// `items` it keeps an index by value and scans from the end (j > i);
// otherwise it compares pairs from the end (i > j).
func (w *walker) unique(sch *ojson.Object, sp string, d []any, ip string, r *result) {
	if len(d) < 2 {
		return
	}
	report := func(i, j int) {
		r.add(ip, sp, "uniqueItems", obj("i", float64(i), "j", float64(j)),
			"must NOT have duplicate items (items ## "+strconv.Itoa(j)+" and "+strconv.Itoa(i)+" are identical)")
	}
	if types := scalarItemTypes(sch); types != nil {
		seen := map[string]int{}
		for i := len(d) - 1; i >= 0; i-- {
			if !typeMatches(types, d[i]) {
				continue
			}
			key := scalarKey(d[i], len(types) > 1)
			if j, ok := seen[key]; ok {
				report(i, j)
				return
			}
			seen[key] = i
		}
		return
	}
	for i := len(d) - 1; i > 0; i-- {
		for j := i - 1; j >= 0; j-- {
			if ojson.Equal(d[i], d[j]) {
				report(i, j)
				return
			}
		}
	}
}

// scalarItemTypes returns items.type as a []any when every type is scalar.
func scalarItemTypes(sch *ojson.Object) []any {
	items, ok := sch.Get("items")
	if !ok {
		return nil
	}
	io, ok := items.(*ojson.Object)
	if !ok {
		return nil
	}
	t, ok := io.Get("type")
	if !ok {
		return nil
	}
	var types []any
	switch tt := t.(type) {
	case string:
		types = []any{tt}
	case []any:
		types = tt
	}
	if len(types) == 0 {
		return nil
	}
	for _, x := range types {
		if x == "object" || x == "array" {
			return nil
		}
	}
	return types
}

// scalarKey is the JavaScript property key Ajv's index uses for a value.
func scalarKey(v any, markStrings bool) string {
	switch x := v.(type) {
	case string:
		if markStrings {
			return x + "_"
		}
		return x
	case float64:
		return num(x)
	case bool:
		return strconv.FormatBool(x)
	default:
		return "null"
	}
}

func (w *walker) obj(sch *ojson.Object, sp string, d *ojson.Object, ip string, r *result) {
	if v, ok := sch.Get("maxProperties"); ok {
		if lim, ok := numberOf(v); ok && float64(d.Len()) > lim {
			r.add(ip, sp, "maxProperties", obj("limit", lim), "must NOT have more than "+num(lim)+" properties")
		}
	}
	if v, ok := sch.Get("minProperties"); ok {
		if lim, ok := numberOf(v); ok && float64(d.Len()) < lim {
			r.add(ip, sp, "minProperties", obj("limit", lim), "must NOT have fewer than "+num(lim)+" properties")
		}
	}
	if v, ok := sch.Get("required"); ok {
		if names, ok := v.([]any); ok {
			for _, n := range names {
				if s, ok := n.(string); ok {
					if _, has := d.Get(s); !has {
						r.add(ip, sp, "required", obj("missingProperty", s), "must have required property '"+s+"'")
					}
				}
			}
		}
	}
	if v, ok := sch.Get("propertyNames"); ok {
		for _, k := range d.Keys {
			sub := w.validate(v, sp+"/propertyNames", k, ip)
			if sub.ok() {
				continue
			}
			for _, is := range sub.issues {
				name := k
				if is.PropertyName == nil {
					is.PropertyName = &name
				}
				r.issues = append(r.issues, is)
			}
			r.add(ip, sp, "propertyNames", obj("propertyName", k), "property name must be valid")
		}
	}
	props, _ := sch.Get("properties")
	propsObj, _ := props.(*ojson.Object)
	patterns, _ := sch.Get("patternProperties")
	patObj, _ := patterns.(*ojson.Object)
	if ap, ok := sch.Get("additionalProperties"); ok {
		for i, k := range d.Keys {
			if propsObj != nil {
				if _, ok := propsObj.Get(k); ok {
					continue
				}
			}
			if patObj != nil && matchesAny(patObj.Keys, k) {
				continue
			}
			if b, isBool := ap.(bool); isBool && !b {
				r.add(ip, sp, "additionalProperties", obj("additionalProperty", k), "must NOT have additional properties")
			} else {
				r.issues = append(r.issues, w.validate(ap, sp+"/additionalProperties", d.Vals[i], ip+"/"+escapePointer(k)).issues...)
			}
		}
		r.allProps = true
	}
	if propsObj != nil {
		for pi, k := range propsObj.Keys {
			if v, ok := d.Get(k); ok {
				r.issues = append(r.issues, w.validate(propsObj.Vals[pi], sp+"/properties/"+escapeSchemaSeg(k), v, ip+"/"+escapePointer(k)).issues...)
				r.markProp(k)
			}
		}
	}
	if patObj != nil {
		for pi, p := range patObj.Keys {
			re := compileRegexp(p)
			if re == nil {
				continue
			}
			for i, k := range d.Keys {
				if re.MatchString(k) {
					r.issues = append(r.issues, w.validate(patObj.Vals[pi], sp+"/patternProperties/"+escapeSchemaSeg(p), d.Vals[i], ip+"/"+escapePointer(k)).issues...)
					r.markProp(k)
				}
			}
		}
	}
	if v, ok := sch.Get("dependentRequired"); ok {
		if deps, ok := v.(*ojson.Object); ok {
			for di, prop := range deps.Keys {
				if _, has := d.Get(prop); !has {
					continue
				}
				list, _ := deps.Vals[di].([]any)
				names := make([]string, 0, len(list))
				for _, x := range list {
					if s, ok := x.(string); ok {
						names = append(names, s)
					}
				}
				word := "property"
				if len(names) != 1 {
					word = "properties"
				}
				joined := strings.Join(names, ", ")
				for _, n := range names {
					if _, has := d.Get(n); !has {
						r.add(ip, sp, "dependentRequired",
							obj("property", prop, "missingProperty", n, "depsCount", float64(len(names)), "deps", joined),
							"must have "+word+" "+joined+" when property "+prop+" is present")
					}
				}
			}
		}
	}
	if v, ok := sch.Get("dependentSchemas"); ok {
		if deps, ok := v.(*ojson.Object); ok {
			for di, prop := range deps.Keys {
				if _, has := d.Get(prop); has {
					r.merge(w.validate(deps.Vals[di], sp+"/dependentSchemas/"+escapeSchemaSeg(prop), d, ip))
				}
			}
		}
	}
}

func matchesAny(patterns []string, k string) bool {
	for _, p := range patterns {
		if re := compileRegexp(p); re != nil && re.MatchString(k) {
			return true
		}
	}
	return false
}

func contains(vals []any, v any) bool {
	for _, x := range vals {
		if ojson.Equal(x, v) {
			return true
		}
	}
	return false
}

func typeMatches(t any, v any) bool {
	switch tt := t.(type) {
	case string:
		return isType(tt, v)
	case []any:
		for _, x := range tt {
			if s, ok := x.(string); ok && isType(s, v) {
				return true
			}
		}
		return false
	}
	return true
}

func isType(t string, v any) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(*ojson.Object)
		return ok
	}
	return false
}

func typeText(t any) string {
	switch tt := t.(type) {
	case string:
		return tt
	case []any:
		parts := make([]string, len(tt))
		for i, x := range tt {
			parts[i], _ = x.(string)
		}
		return strings.Join(parts, ",")
	}
	return ""
}
