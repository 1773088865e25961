// Package ojson decodes JSON keeping object key order and encodes values the
// way JavaScript's JSON.parse and JSON.stringify do, so that packd's answers
// match the existing pack services byte for byte.
//
// A decoded value is one of: nil, bool, float64, string, []any, *Object.
package ojson

import (
	"slices"
)

// Object is a JSON object with its keys in JavaScript's order: keys that
// are array indices ("0", "2", "10": canonical integers below 2^32-1)
// first, in numeric order, then the others in document order, as
// JSON.parse builds objects and as JSON.stringify and for-in (so Ajv) walk
// them. A key that appears twice keeps its first position and its last
// value, as JSON.parse does.
// Keys and Vals may be set directly when building an object; Set and Get
// keep an index of the keys once there are more than a few, so building and
// reading an object of n keys is linear.
type Object struct {
	Keys  []string
	Vals  []any
	index map[string]int // key -> position, for objects of indexFrom keys or more
}

// indexFrom is the size from which an object indexes its keys.
const indexFrom = 16

// find returns the position of key, or -1.
func (o *Object) find(key string) int {
	if len(o.Keys) < indexFrom {
		for i, k := range o.Keys {
			if k == key {
				return i
			}
		}
		return -1
	}
	if len(o.index) != len(o.Keys) { // built here, or Keys grew without Set
		o.index = make(map[string]int, len(o.Keys))
		for i, k := range o.Keys {
			if _, dup := o.index[k]; !dup {
				o.index[k] = i
			}
		}
	}
	if i, ok := o.index[key]; ok {
		return i
	}
	return -1
}

// Get returns the value under key and whether it is present.
func (o *Object) Get(key string) (any, bool) {
	if i := o.find(key); i >= 0 {
		return o.Vals[i], true
	}
	return nil, false
}

// Set replaces the value under key, or appends the key at the end.
func (o *Object) Set(key string, v any) {
	if i := o.find(key); i >= 0 {
		o.Vals[i] = v
		return
	}
	if n, ok := arrayIndex(key); ok {
		// Among the leading index keys, in numeric order.
		at := 0
		for at < len(o.Keys) {
			m, isIndex := arrayIndex(o.Keys[at])
			if !isIndex || m > n {
				break
			}
			at++
		}
		if at < len(o.Keys) {
			o.Keys = slices.Insert(o.Keys, at, key)
			o.Vals = slices.Insert(o.Vals, at, v)
			o.index = nil // positions moved: rebuilt when next needed
			return
		}
	}
	o.Keys = append(o.Keys, key)
	o.Vals = append(o.Vals, v)
	if o.index != nil {
		o.index[key] = len(o.Keys) - 1
	}
}

// add is Set without JavaScript's order, for the decoder, which orders the
// object once it is whole (Set's ordered insert is linear per key).
func (o *Object) add(key string, v any) {
	if i := o.find(key); i >= 0 {
		o.Vals[i] = v
		return
	}
	o.Keys = append(o.Keys, key)
	o.Vals = append(o.Vals, v)
	if o.index != nil {
		o.index[key] = len(o.Keys) - 1
	}
}

// arrayIndex reports whether a key is an array index as JavaScript orders
// object keys (a canonical integer from 0 to 2^32-2), and its value.
func arrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (k[0] == '0' && len(k) > 1) {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, n < 1<<32-1
}

// jsOrder puts an object's array-index keys first, in numeric order, the
// others keeping theirs (keys are unique).
func jsOrder(keys []string, vals []any) {
	type kv struct {
		k string
		v any
		n uint64
	}
	var idx, rest []kv
	for i, k := range keys {
		if n, ok := arrayIndex(k); ok {
			idx = append(idx, kv{k, vals[i], n})
		} else {
			rest = append(rest, kv{k, vals[i], 0})
		}
	}
	slices.SortStableFunc(idx, func(a, b kv) int {
		if a.n < b.n {
			return -1
		}
		if a.n > b.n {
			return 1
		}
		return 0
	})
	for i, e := range append(idx, rest...) {
		keys[i], vals[i] = e.k, e.v
	}
}

// Len is the number of keys.
func (o *Object) Len() int { return len(o.Keys) }

// Plain converts a decoded value into the unordered form (map[string]any)
// that generic validators expect.
func Plain(v any) any {
	switch x := v.(type) {
	case *Object:
		m := make(map[string]any, len(x.Keys))
		for i, k := range x.Keys {
			m[k] = Plain(x.Vals[i])
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Plain(e)
		}
		return out
	default:
		return v
	}
}

// Clone deep-copies a decoded value.
func Clone(v any) any {
	switch x := v.(type) {
	case *Object:
		o := &Object{Keys: append([]string(nil), x.Keys...), Vals: make([]any, len(x.Vals))}
		for i, e := range x.Vals {
			o.Vals[i] = Clone(e)
		}
		return o
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Clone(e)
		}
		return out
	default:
		return v
	}
}

// Equal reports deep equality with JSON semantics (object key order ignored).
func Equal(a, b any) bool {
	switch x := a.(type) {
	case *Object:
		y, ok := b.(*Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for i, k := range x.Keys {
			w, ok := y.Get(k)
			if !ok || !Equal(x.Vals[i], w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
