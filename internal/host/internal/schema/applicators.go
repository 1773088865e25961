package schema

import (
	"strconv"

	"github.com/kindgi/packd/internal/ojson"
)

// The applicators of any type: anyOf, oneOf, if/then/else, and the
// unevaluated* keywords.

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
			r.add(ip, sp, "unevaluatedProperties", params("unevaluatedProperty", k), "must NOT have unevaluated properties")
		} else {
			r.include(w.validate(u, sp+"/unevaluatedProperties", d.Vals[i], ip+"/"+escapePointer(k)))
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
			r.add(ip, sp, "unevaluatedItems", params("limit", float64(r.items)), "must NOT have more than "+strconv.Itoa(r.items)+" items")
		}
	} else {
		for i := r.items; i < len(d); i++ {
			r.include(w.validate(u, sp+"/unevaluatedItems", d[i], ip+"/"+strconv.Itoa(i)))
		}
	}
	r.allItems = true
}

func (w *walker) anyOf(a any, sp string, data any, ip string, r *result) {
	subs, ok := a.([]any)
	if !ok {
		return
	}
	var failed result
	passed := false
	for i, s := range subs {
		sub := w.validate(s, sp+"/anyOf/"+strconv.Itoa(i), data, ip)
		if sub.ok() {
			passed = true
			r.mergeEvaluated(sub)
		} else {
			failed.include(sub)
		}
	}
	if !passed {
		r.include(failed)
		r.add(ip, sp, "anyOf", params(), "must match a schema in anyOf")
	}
}

func (w *walker) oneOf(a any, sp string, data any, ip string, r *result) {
	subs, ok := a.([]any)
	if !ok {
		return
	}
	var failed result
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
			failed.include(sub)
		}
	}
	switch len(passing) {
	case 0:
		r.include(failed)
		r.add(ip, sp, "oneOf", params("passingSchemas", nil), "must match exactly one schema in oneOf")
	case 1:
		r.mergeEvaluated(passRes)
	default:
		r.add(ip, sp, "oneOf", params("passingSchemas", []any{float64(passing[0]), float64(passing[1])}), "must match exactly one schema in oneOf")
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
	r.include(sub)
	r.add(ip, sp, "if", params("failingKeyword", branch), `must match "`+branch+`" schema`)
}
