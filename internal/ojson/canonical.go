package ojson

import (
	"slices"
	"strings"
)

// Canonical writes v as kindgi indexers write an index: keys sorted (by
// their bytes) at every level, two-space indent, one array element or
// member per line, empty objects and arrays as {} and [], numbers as
// JavaScript writes them (integral ones without a fraction), and a
// trailing newline. The same value always gives the same bytes.
func Canonical(v any) []byte {
	b := appendCanonical(nil, v, 0)
	return append(b, '\n')
}

func appendCanonical(b []byte, v any, depth int) []byte {
	indent := func(b []byte, d int) []byte {
		b = append(b, '\n')
		return append(b, strings.Repeat("  ", d)...)
	}
	switch x := v.(type) {
	case *Object:
		if x.Len() == 0 {
			return append(b, "{}"...)
		}
		keys := slices.Clone(x.Keys)
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = indent(b, depth+1)
			b = AppendString(b, k)
			b = append(b, ": "...)
			val, _ := x.Get(k)
			b = appendCanonical(b, val, depth+1)
		}
		b = indent(b, depth)
		return append(b, '}')
	case []any:
		if len(x) == 0 {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = indent(b, depth+1)
			b = appendCanonical(b, e, depth+1)
		}
		b = indent(b, depth)
		return append(b, ']')
	}
	return Append(b, v)
}
