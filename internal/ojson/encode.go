package ojson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

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
		if i = plainRunString(s, i); i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
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
