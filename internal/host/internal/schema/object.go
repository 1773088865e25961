package schema

import (
	"strings"

	"github.com/kindgi/packd/internal/ojson"
)

// The object keywords: properties and their coverage, required, the
// limits, names and dependencies.

func (w *walker) objectKeywords(sch *ojson.Object, sp string, d *ojson.Object, ip string, r *result) {
	if v, ok := sch.Get("maxProperties"); ok {
		if lim, ok := numberOf(v); ok && float64(d.Len()) > lim {
			r.add(ip, sp, "maxProperties", params("limit", lim), "must NOT have more than "+num(lim)+" properties")
		}
	}
	if v, ok := sch.Get("minProperties"); ok {
		if lim, ok := numberOf(v); ok && float64(d.Len()) < lim {
			r.add(ip, sp, "minProperties", params("limit", lim), "must NOT have fewer than "+num(lim)+" properties")
		}
	}
	if v, ok := sch.Get("required"); ok {
		if names, ok := v.([]any); ok {
			for _, n := range names {
				if s, ok := n.(string); ok {
					if _, has := d.Get(s); !has {
						r.add(ip, sp, "required", params("missingProperty", s), "must have required property '"+s+"'")
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
				r.push(is)
			}
			r.more += sub.more
			r.add(ip, sp, "propertyNames", params("propertyName", k), "property name must be valid")
		}
	}
	props, _ := sch.Get("properties")
	propsObj, _ := props.(*ojson.Object)
	patterns, _ := sch.Get("patternProperties")
	patObj, _ := patterns.(*ojson.Object)
	if ap, ok := sch.Get("additionalProperties"); ok {
		for i, k := range d.Keys {
			if w.s.declared(propsObj, patObj, k) {
				continue
			}
			if b, isBool := ap.(bool); isBool && !b {
				r.add(ip, sp, "additionalProperties", params("additionalProperty", k), "must NOT have additional properties")
			} else {
				r.include(w.validate(ap, sp+"/additionalProperties", d.Vals[i], ip+"/"+escapePointer(k)))
			}
		}
		r.allProps = true
	}
	if propsObj != nil {
		for pi, k := range propsObj.Keys {
			if v, ok := d.Get(k); ok {
				r.include(w.validate(propsObj.Vals[pi], sp+"/properties/"+escapeSchemaSeg(k), v, ip+"/"+escapePointer(k)))
				r.markProp(k)
			}
		}
	}
	if patObj != nil {
		for pi, p := range patObj.Keys {
			re := w.s.regexp(p)
			if re == nil {
				continue
			}
			for i, k := range d.Keys {
				if re.MatchString(k) {
					r.include(w.validate(patObj.Vals[pi], sp+"/patternProperties/"+escapeSchemaSeg(p), d.Vals[i], ip+"/"+escapePointer(k)))
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
							params("property", prop, "missingProperty", n, "depsCount", float64(len(names)), "deps", joined),
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

// declared reports whether properties or patternProperties name the key:
// the keys additionalProperties leaves alone (here and in FillDefaults).
func (s *Schema) declared(props, patterns *ojson.Object, k string) bool {
	if props != nil {
		if _, ok := props.Get(k); ok {
			return true
		}
	}
	if patterns != nil {
		for _, p := range patterns.Keys {
			if re := s.regexp(p); re != nil && re.MatchString(k) {
				return true
			}
		}
	}
	return false
}
