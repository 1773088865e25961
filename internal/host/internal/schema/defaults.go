package schema

import "github.com/kindgi/packd/internal/ojson"

// FillDefaults fills schema defaults into data in place, as Ajv's
// useDefaults does: a missing property whose schema in `properties` has a
// `default` gets a copy of it, appended in the schema's key order; the walk
// goes through $ref, allOf, properties, additionalProperties,
// patternProperties, prefixItems and items, but never into anyOf, oneOf, not
// or if, where Ajv ignores defaults. data must be owned by the caller.
func (s *Schema) FillDefaults(data any) {
	w := walker{s: s}
	w.fill(s.doc, data)
}

func (w *walker) fill(schema any, data any) {
	sch, ok := schema.(*ojson.Object)
	if !ok || w.depth > maxDepth {
		return
	}
	w.depth++
	defer func() { w.depth-- }()
	for _, k := range []string{"$ref", "$dynamicRef"} {
		if ref, ok := sch.Get(k); ok {
			if target, _, ok := w.find(ref); ok {
				w.fill(target, data)
			}
		}
	}
	if all, ok := sch.Get("allOf"); ok {
		if subs, ok := all.([]any); ok {
			for _, s := range subs {
				w.fill(s, data)
			}
		}
	}
	switch d := data.(type) {
	case *ojson.Object:
		props, _ := sch.Get("properties")
		po, _ := props.(*ojson.Object)
		if po != nil {
			for i, k := range po.Keys {
				if _, has := d.Get(k); has {
					continue
				}
				if sub, ok := po.Vals[i].(*ojson.Object); ok {
					if def, ok := sub.Get("default"); ok {
						d.Set(k, ojson.Clone(def))
					}
				}
			}
		}
		pat, _ := sch.Get("patternProperties")
		pp, _ := pat.(*ojson.Object)
		ap, hasAP := sch.Get("additionalProperties")
		for i, k := range d.Keys {
			if po != nil {
				if sub, ok := po.Get(k); ok {
					w.fill(sub, d.Vals[i])
				}
			}
			if pp != nil {
				for pi, p := range pp.Keys {
					if re := w.s.regexp(p); re != nil && re.MatchString(k) {
						w.fill(pp.Vals[pi], d.Vals[i])
					}
				}
			}
			if hasAP && !w.s.declared(po, pp, k) {
				w.fill(ap, d.Vals[i])
			}
		}
	case []any:
		start := 0
		if pre, ok := sch.Get("prefixItems"); ok {
			if subs, ok := pre.([]any); ok {
				start = len(subs)
				for i := 0; i < len(subs) && i < len(d); i++ {
					w.fill(subs[i], d[i])
				}
			}
		}
		if items, ok := sch.Get("items"); ok {
			for i := start; i < len(d); i++ {
				w.fill(items, d[i])
			}
		}
	}
}
