package schema

import (
	"unicode/utf8"

	"github.com/kindgi/packd/internal/ojson"
)

// The string keywords: lengths, pattern and format.

func (w *walker) stringKeywords(sch *ojson.Object, sp string, d string, ip string, r *result) {
	n := utf8.RuneCountInString(d)
	if v, ok := sch.Get("maxLength"); ok {
		if lim, ok := numberOf(v); ok && float64(n) > lim {
			r.add(ip, sp, "maxLength", params("limit", lim), "must NOT have more than "+num(lim)+" characters")
		}
	}
	if v, ok := sch.Get("minLength"); ok {
		if lim, ok := numberOf(v); ok && float64(n) < lim {
			r.add(ip, sp, "minLength", params("limit", lim), "must NOT have fewer than "+num(lim)+" characters")
		}
	}
	if v, ok := sch.Get("pattern"); ok {
		if p, ok := v.(string); ok {
			if re := w.s.regexp(p); re != nil && !re.MatchString(d) {
				r.add(ip, sp, "pattern", params("pattern", p), `must match pattern "`+p+`"`)
			}
		}
	}
	if v, ok := sch.Get("format"); ok {
		if f, ok := v.(string); ok && !w.s.formatOK(f, d) {
			r.add(ip, sp, "format", params("format", f), `must match format "`+f+`"`)
		}
	}
}
