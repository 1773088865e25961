package schema

import (
	"math"
	"strings"

	"github.com/kindgi/packd/internal/ojson"
)

// type and enum: what JSON type a value has, and membership.

func inEnum(vals []any, v any) bool {
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
