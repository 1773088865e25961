package schema

import (
	"math"

	"github.com/kindgi/packd/internal/ojson"
)

// The number keywords.

func numberOf(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

func (w *walker) numberKeywords(sch *ojson.Object, sp string, d float64, ip string, r *result) {
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
				r.add(ip, sp, c.kw, params("comparison", c.cmp, "limit", lim), "must be "+c.cmp+" "+num(lim))
			}
		}
	}
	if v, ok := sch.Get("multipleOf"); ok {
		if m, ok := numberOf(v); ok && m != 0 {
			q := d / m
			if q != math.Trunc(q) {
				r.add(ip, sp, "multipleOf", params("multipleOf", m), "must be multiple of "+num(m))
			}
		}
	}
}
