package ojson

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// errEnd: the data ended inside a value.
var errEnd = errors.New("unexpected end of input")

// ErrSyntax is wrapped by every decoding error.
var ErrSyntax = errors.New("ojson: invalid JSON")

// SyntaxError is a decoding error: what is wrong and where (Line and
// Column count from 1). It wraps ErrSyntax; read it with errors.As.
type SyntaxError struct {
	Msg          string
	Line, Column int
}

func (e *SyntaxError) Error() string { return ErrSyntax.Error() + ": " + e.Detail() }

// Unwrap is ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// Detail is what is wrong and where, without the package's words:
// "unexpected end of input at line 1, column 9".
func (e *SyntaxError) Detail() string {
	return fmt.Sprintf("%s at line %d, column %d", e.Msg, e.Line, e.Column)
}

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
// or its deadline has passed by the clock (a context's timer fires late
// when every core is busy, and packd's call contexts arm none unless
// asked): it looks every checkEvery values.
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
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("ojson: decoding: %w", err)
	}
	if err != nil {
		line, col := d.position()
		return nil, &SyntaxError{Msg: err.Error(), Line: line, Column: col}
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
	if d.values++; d.values%checkEvery == 0 {
		if err := d.ctx.Err(); err != nil {
			return nil, err
		}
		if dl, ok := d.ctx.Deadline(); ok && !time.Now().Before(dl) {
			return nil, context.DeadlineExceeded
		}
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
	// The common case: no escape, ASCII.
	if d.off = plainRun(d.data, start); d.off < len(d.data) && d.data[d.off] == '"' {
		d.off++
		if d.src != "" {
			return d.src[start : d.off-1], nil
		}
		return string(d.data[start : d.off-1]), nil
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
