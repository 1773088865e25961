package schema

import (
	"math"
	"strconv"

	"github.com/kindgi/packd/internal/ojson"
)

// The array keywords: items, contains, uniqueItems and the limits.

func (w *walker) arrayKeywords(sch *ojson.Object, sp string, d []any, ip string, r *result) {
	if v, ok := sch.Get("maxItems"); ok {
		if lim, ok := numberOf(v); ok && float64(len(d)) > lim {
			r.add(ip, sp, "maxItems", params("limit", lim), "must NOT have more than "+num(lim)+" items")
		}
	}
	if v, ok := sch.Get("minItems"); ok {
		if lim, ok := numberOf(v); ok && float64(len(d)) < lim {
			r.add(ip, sp, "minItems", params("limit", lim), "must NOT have fewer than "+num(lim)+" items")
		}
	}
	start, prefixed := 0, false
	if v, ok := sch.Get("prefixItems"); ok {
		if subs, ok := v.([]any); ok {
			prefixed = true
			start = len(subs)
			for i := 0; i < len(subs) && i < len(d); i++ {
				r.include(w.validate(subs[i], sp+"/prefixItems/"+strconv.Itoa(i), d[i], ip+"/"+strconv.Itoa(i)))
			}
			r.items = max(r.items, min(start, len(d)))
		}
	}
	if v, ok := sch.Get("items"); ok {
		// Ajv reports "items": false as a limit only after prefixItems;
		// alone, every item fails the false schema.
		if b, isBool := v.(bool); isBool && !b && prefixed {
			if len(d) > start {
				r.add(ip, sp, "items", params("limit", float64(start)), "must NOT have more than "+strconv.Itoa(start)+" items")
			}
		} else {
			for i := start; i < len(d); i++ {
				r.include(w.validate(v, sp+"/items", d[i], ip+"/"+strconv.Itoa(i)))
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
	var failed result
	count := 0.0
	for i, e := range d {
		sub := w.validate(c, sp+"/contains", e, ip+"/"+strconv.Itoa(i))
		if sub.ok() {
			count++
		} else {
			failed.include(sub)
		}
	}
	if count >= minC && count <= maxC {
		return
	}
	r.include(failed)
	if hasMax {
		r.add(ip, sp, "contains", params("minContains", minC, "maxContains", maxC),
			"must contain at least "+num(minC)+" and no more than "+num(maxC)+" valid item(s)")
	} else {
		r.add(ip, sp, "contains", params("minContains", minC), "must contain at least "+num(minC)+" valid item(s)")
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
		r.add(ip, sp, "uniqueItems", params("i", float64(i), "j", float64(j)),
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
