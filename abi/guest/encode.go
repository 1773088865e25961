package guest

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// A handler's output is encoded without reflection when it is made of
// JSON's own values (nil, bool, string, the numbers, json.Number,
// json.RawMessage, map[string]any, []any, and typed maps and slices of
// strings): encoding/json's reflective encoder runs as wasm in the guest,
// slowly. The bytes are exactly json.Marshal's (keys sorted, HTML and
// U+2028/U+2029 escaped, invalid UTF-8 replaced, floats formatted as it
// does); anything else (a struct, a pointer, a float that is not finite)
// makes the caller use json.Marshal, so answers and error messages are
// the same either way.

// appendJSON appends v as json.Marshal would; false: use json.Marshal.
func appendJSON(b []byte, v any, depth int) ([]byte, bool) {
	if depth > 1000 {
		return b, false // json.Marshal's own depth checks and errors
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case string:
		return appendString(b, v), true
	case float64:
		return appendFloat(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int32:
		return strconv.AppendInt(b, int64(v), 10), true
	case uint64:
		return strconv.AppendUint(b, v, 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), true
	case json.Number:
		if v == "" || !validNumber(string(v)) {
			return b, false
		}
		return append(b, v...), true
	case json.RawMessage:
		if v == nil || !marshalsAsIs(v) {
			return b, false
		}
		return append(b, v...), true
	case []any:
		return appendList(b, v, func(b []byte, e any) ([]byte, bool) { return appendJSON(b, e, depth+1) })
	case []string:
		return appendList(b, v, func(b []byte, e string) ([]byte, bool) { return appendString(b, e), true })
	case map[string]any:
		return appendMap(b, v, func(b []byte, e any) ([]byte, bool) { return appendJSON(b, e, depth+1) })
	case map[string]string:
		return appendMap(b, v, func(b []byte, e string) ([]byte, bool) { return appendString(b, e), true })
	}
	return b, false
}

// appendList appends a JSON array of v's elements, each by elem (null for
// a nil slice, as json.Marshal writes it).
func appendList[T any](b []byte, v []T, elem func([]byte, T) ([]byte, bool)) ([]byte, bool) {
	if v == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, e := range v {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = elem(b, e); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendMap appends a JSON object of m's members, keys sorted, each value
// by elem (null for a nil map, as json.Marshal writes it).
func appendMap[V any](b []byte, m map[string]V, elem func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, k), ':')
		var ok bool
		if b, ok = elem(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendFloat is encoding/json's float64 format: the shortest repr, in
// exponent form below 1e-6 and from 1e21, with a one-digit negative
// exponent written so (1e-07 as 1e-7). Not finite: json.Marshal's error.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendString is encoding/json's string encoding with HTML escaping. (The
// host's internal/ojson has JSON.stringify's, which escapes neither HTML
// nor U+2028 and keeps lone surrogates; the guest's module cannot import
// the host's internal packages, nor should it: the rules differ.)
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
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
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}

// validNumber reports whether s is a JSON number.
func validNumber(s string) bool {
	p := parser{b: []byte(s)}
	return p.number() && p.i == len(s)
}
