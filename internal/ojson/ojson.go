// Package ojson decodes JSON keeping object key order and encodes values the
// way JavaScript's JSON.parse and JSON.stringify do, so that packd's answers
// match the existing pack services byte for byte.
//
// A decoded value is one of: nil, bool, float64, string, []any, *Object.
package ojson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
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

// errEnd: the data ended inside a value.
var errEnd = errors.New("unexpected end of input")

// ErrSyntax is wrapped by every decoding error.
var ErrSyntax = errors.New("ojson: invalid JSON")

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 10000

// Decode parses exactly one JSON value from data (surrounding whitespace
// allowed) as JSON.parse does: the last of duplicate keys wins, numbers out
// of range are infinite, invalid UTF-8 becomes U+FFFD, and a lone surrogate
// escape ("\ud800") is kept (as WTF-8, which Append writes back as the same
// escape). It takes time linear in len(data).
func Decode(data []byte) (any, error) {
	return DecodeContext(context.Background(), data)
}

// DecodeContext is Decode that gives up, with ctx's error, once ctx is done
// (it looks every checkEvery values).
func DecodeContext(ctx context.Context, data []byte) (any, error) {
	d := decoders.Get().(*decoder)
	defer d.release()
	d.data, d.ctx = data, ctx
	if len(data) <= oneCopyUpTo {
		d.src = string(data)
	}
	d.space()
	v, err := d.value(0)
	if err == nil {
		d.space()
		if d.off < len(d.data) {
			err = errors.New("unexpected data after the value")
		}
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, fmt.Errorf("ojson: decoding: %w", err)
	}
	if err != nil {
		line, col := d.position()
		return nil, fmt.Errorf("%w: %v at line %d, column %d", ErrSyntax, err, line, col)
	}
	return v, nil
}

type decoder struct {
	data   []byte
	off    int
	ctx    context.Context
	values int
	// keys, vals and items are scratch stacks: the members of the objects
	// and the elements of the arrays being decoded, each copied out once
	// at its exact size when it ends (appending to each value's own slices
	// reallocated them as they grew).
	keys  []string
	vals  []any
	items []any
	// src is data as one string when it is short (oneCopyUpTo): a string
	// with no escape is then a substring of it, not a copy of its own.
	src string
}

// oneCopyUpTo is the length up to which a document's strings share one
// copy of it (a call's message, or a pack's answer, is typically a few
// hundred bytes of a dozen strings); a longer document copies each string,
// so that a value kept from it never keeps the whole document alive.
const oneCopyUpTo = 4 << 10

// decoders keeps decoders, so that their scratch stacks are not grown
// anew for every document.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

// keepScratch is the most entries of each scratch stack a decoder takes
// back to the pool.
const keepScratch = 1 << 10

// release puts the decoder back in the pool, unless its scratch grew past
// keepScratch. Its stacks hold nothing of the document: object and array
// clear the entries they pop.
func (d *decoder) release() {
	if cap(d.keys) > keepScratch || cap(d.vals) > keepScratch || cap(d.items) > keepScratch {
		return
	}
	*d = decoder{keys: d.keys[:0], vals: d.vals[:0], items: d.items[:0]}
	decoders.Put(d)
}

// object decodes an object's members after its '{'. Up to indexFrom keys
// they gather on the scratch stack (a duplicate key replaces the value in
// place, as Set does); past that the object takes them over and its key
// index keeps decoding linear. Array-index keys are put in JavaScript's
// order once, at the end (n log n).
func (d *decoder) object(depth int) (any, error) {
	var obj *Object // made once the members are known, or once they are many
	base := len(d.keys)
	defer func() {
		clear(d.keys[base:])
		clear(d.vals[base:])
		d.keys, d.vals = d.keys[:base], d.vals[:base]
	}()
	d.space()
	if d.off < len(d.data) && d.data[d.off] == '}' {
		d.off++
		return &Object{}, nil
	}
	for {
		d.space()
		if d.off >= len(d.data) || d.data[d.off] != '"' {
			return nil, d.unexpected()
		}
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		if err := d.expect(':'); err != nil {
			return nil, err
		}
		d.space()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			obj.add(key, v)
		} else {
			dup := -1
			for i := base; i < len(d.keys); i++ {
				if d.keys[i] == key {
					dup = i
					break
				}
			}
			if dup >= 0 {
				d.vals[dup] = v
			} else {
				d.keys, d.vals = append(d.keys, key), append(d.vals, v)
			}
			if len(d.keys)-base >= indexFrom {
				obj = &Object{Keys: slices.Clone(d.keys[base:]), Vals: slices.Clone(d.vals[base:])}
			}
		}
		if d.space(); d.off < len(d.data) && d.data[d.off] == ',' {
			d.off++
			continue
		}
		if obj == nil {
			obj = smallObject(d.keys[base:], d.vals[base:])
		}
		if slices.ContainsFunc(obj.Keys, func(k string) bool { _, ok := arrayIndex(k); return ok }) {
			jsOrder(obj.Keys, obj.Vals)
			obj.index = nil
		}
		return obj, d.expect('}')
	}
}

// smallObject copies the members of an object of fewer than indexFrom
// keys. One of 1 or 2 keys (a call's tool, ctx and most inputs and
// outputs) is one allocation, not three, and no larger in bytes than the
// three were.
func smallObject(keys []string, vals []any) *Object {
	switch len(keys) {
	case 1:
		s := &struct {
			o Object
			k [1]string
			v [1]any
		}{k: [1]string{keys[0]}, v: [1]any{vals[0]}}
		s.o.Keys, s.o.Vals = s.k[:], s.v[:]
		return &s.o
	case 2:
		s := &struct {
			o Object
			k [2]string
			v [2]any
		}{k: [2]string{keys[0], keys[1]}, v: [2]any{vals[0], vals[1]}}
		s.o.Keys, s.o.Vals = s.k[:], s.v[:]
		return &s.o
	}
	return &Object{Keys: slices.Clone(keys), Vals: slices.Clone(vals)}
}

func (d *decoder) array(depth int) (any, error) {
	base := len(d.items)
	defer func() {
		clear(d.items[base:])
		d.items = d.items[:base]
	}()
	d.space()
	if d.off < len(d.data) && d.data[d.off] == ']' {
		d.off++
		return []any{}, nil
	}
	for {
		d.space()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		d.items = append(d.items, v)
		if d.space(); d.off < len(d.data) && d.data[d.off] == ',' {
			d.off++
			continue
		}
		return slices.Clone(d.items[base:]), d.expect(']')
	}
}

// checkEvery is how many values DecodeContext decodes between two looks at
// its context.
const checkEvery = 4096

// position is the 1-based line and column (in bytes) of the offset.
func (d *decoder) position() (int, int) {
	before := d.data[:min(d.off, len(d.data))]
	line := bytes.Count(before, []byte{'\n'}) + 1
	return line, len(before) - bytes.LastIndexByte(before, '\n')
}

func (d *decoder) space() {
	for d.off < len(d.data) {
		switch d.data[d.off] {
		case ' ', '\t', '\n', '\r':
			d.off++
		default:
			return
		}
	}
}

func (d *decoder) unexpected() error {
	if d.off >= len(d.data) {
		return errEnd
	}
	return fmt.Errorf("unexpected %q", d.data[d.off])
}

// expect consumes c, after whitespace.
func (d *decoder) expect(c byte) error {
	d.space()
	if d.off < len(d.data) && d.data[d.off] == c {
		d.off++
		return nil
	}
	return d.unexpected()
}

func (d *decoder) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("nesting too deep")
	}
	if d.off >= len(d.data) {
		return nil, errEnd
	}
	if d.values++; d.values%checkEvery == 0 && d.ctx.Err() != nil {
		return nil, d.ctx.Err()
	}
	switch c := d.data[d.off]; {
	case c == '{':
		d.off++
		return d.object(depth)
	case c == '[':
		d.off++
		return d.array(depth)
	case c == '"':
		return d.str()
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	for _, lit := range [...]struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if bytes.HasPrefix(d.data[d.off:], []byte(lit.text)) {
			d.off += len(lit.text)
			return lit.v, nil
		}
	}
	return nil, d.unexpected()
}

// number reads a number of JSON's grammar.
func (d *decoder) number() (any, error) {
	start := d.off
	digits := func() int {
		n := 0
		for d.off < len(d.data) && d.data[d.off] >= '0' && d.data[d.off] <= '9' {
			d.off++
			n++
		}
		return n
	}
	if d.data[d.off] == '-' {
		d.off++
	}
	if d.off < len(d.data) && d.data[d.off] == '0' {
		d.off++
	} else if digits() == 0 {
		return nil, d.unexpected()
	}
	if d.off < len(d.data) && d.data[d.off] == '.' {
		d.off++
		if digits() == 0 {
			return nil, d.unexpected()
		}
	}
	if d.off < len(d.data) && (d.data[d.off] == 'e' || d.data[d.off] == 'E') {
		d.off++
		if d.off < len(d.data) && (d.data[d.off] == '+' || d.data[d.off] == '-') {
			d.off++
		}
		if digits() == 0 {
			return nil, d.unexpected()
		}
	}
	f, err := strconv.ParseFloat(string(d.data[start:d.off]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, err
	}
	// Out of float64 range: JSON.parse gives ±Infinity (written as null).
	return f, nil
}

// str reads a string at d.off (its opening quote).
func (d *decoder) str() (string, error) {
	d.off++
	start := d.off
	// The common case: no escape, valid UTF-8.
	for d.off < len(d.data) {
		c := d.data[d.off]
		if c == '"' {
			s := d.data[start:d.off]
			d.off++
			if d.src != "" {
				return d.src[start : d.off-1], nil
			}
			return string(s), nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		d.off++
	}
	d.off = start
	var b []byte
	for d.off < len(d.data) {
		c := d.data[d.off]
		switch {
		case c == '"':
			d.off++
			return string(b), nil
		case c < 0x20:
			return "", fmt.Errorf("control character %q in a string", c)
		case c == '\\':
			d.off++
			if d.off >= len(d.data) {
				return "", errEnd
			}
			e := d.data[d.off]
			d.off++
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", errors.New("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) && r < 0xdc00 && bytes.HasPrefix(d.data[d.off:], []byte(`\u`)) {
					save := d.off
					d.off += 2
					if lo, ok := d.hex4(); ok && lo >= 0xdc00 && lo <= 0xdfff {
						b = utf8.AppendRune(b, utf16.DecodeRune(r, lo))
						continue
					}
					d.off = save
				}
				b = appendWTF8(b, r)
			default:
				d.off--
				return "", fmt.Errorf("invalid escape \\%c", e)
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			d.off++
		default:
			r, size := utf8.DecodeRune(d.data[d.off:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, "\ufffd"...)
			} else {
				b = append(b, d.data[d.off:d.off+size]...)
			}
			d.off += size
		}
	}
	return "", errEnd
}

func (d *decoder) hex4() (rune, bool) {
	if d.off+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.off : d.off+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.off += 4
	return r, true
}

// appendWTF8 appends r as UTF-8, or, for a lone surrogate (which UTF-8
// cannot hold), as the three bytes UTF-8 would give it (WTF-8).
func appendWTF8(b []byte, r rune) []byte {
	if !utf16.IsSurrogate(r) {
		return utf8.AppendRune(b, r)
	}
	return append(b, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
}

// surrogateAt reports the lone surrogate WTF-8 holds at s[i:], if any.
func surrogateAt(s string, i int) (rune, bool) {
	if i+2 < len(s) && s[i] == 0xed && s[i+1] >= 0xa0 && s[i+1] <= 0xbf && s[i+2]&0xc0 == 0x80 {
		return 0xd000 | rune(s[i+1]&0x3f)<<6 | rune(s[i+2]&0x3f), true
	}
	return 0, false
}

// Encode writes v as JSON.stringify(v) would (no whitespace).
func Encode(v any) []byte {
	return Append(make([]byte, 0, 128), v)
}

// Append appends the encoding of v to b.
func Append(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if x {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case float64:
		return append(b, FormatNumber(x)...)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case string:
		return AppendString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = Append(b, e)
		}
		return append(b, ']')
	case []string:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, e)
		}
		return append(b, ']')
	case *Object:
		b = append(b, '{')
		for i, k := range x.Keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			b = Append(b, x.Vals[i])
		}
		return append(b, '}')
	case json.RawMessage:
		return append(b, x...)
	default:
		panic(fmt.Sprintf("ojson: cannot encode %T", v))
	}
}

// FormatNumber prints f as JavaScript's Number.prototype.toString does.
func FormatNumber(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "null"
	case f == 0:
		return "0"
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1e+21, 1.5e-07
	mant, exp, _ := bytes.Cut([]byte(s), []byte("e"))
	sign := exp[0]
	digits := bytes.TrimLeft(exp[1:], "0")
	return string(mant) + "e" + string(sign) + string(digits)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string the way JSON.stringify escapes it:
// only '"', '\\' and control characters; a lone surrogate (WTF-8, as Decode
// keeps it) is written as its \\u escape, other invalid UTF-8 as U+FFFD.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			if sur, ok := surrogateAt(s, i); ok {
				b = append(b, '\\', 'u', hexDigits[sur>>12], hexDigits[sur>>8&0xf], hexDigits[sur>>4&0xf], hexDigits[sur&0xf])
				i += 3
			} else {
				b = append(b, "\ufffd"...)
				i++
			}
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

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
