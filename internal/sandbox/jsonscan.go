package sandbox

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/abi"
)

// The json_scan import: finds where the JSON value at the start of a range
// of guest memory ends, checking it is valid, at the host's pace. A Go
// guest reads a byte at a time through its functions' dispatch loops
// (every jump a br_table), so finding the end of a 64 KiB input took it
// a millisecond and about 500 units of fuel a byte; here it is a native
// loop, paid for at jsonScanCost a byte, a chunk at a time before it is
// read.

// maxJSONDepth is how deep json_scan lets arrays and objects nest; deeper
// is answered as not valid (the Go SDK then leaves the value to
// encoding/json, as it does with its own scanner's answer).
const maxJSONDepth = 1000

// firstScanChunk is what json_scan pays for first: most values a guest
// asks about end well inside the range it gives (the rest of its buffer),
// so the chunks start small and double up to hostChunk.
const firstScanChunk = 64

// jsonScan answers json_scan(ptr, len) -> i64: -1 when [ptr, ptr+len)
// does not start with one valid JSON value (white space before it
// allowed) nested at most maxJSONDepth deep; else the offset just past
// the value, with bit 32 set when white space was found outside strings
// and bit 33 when a string holds a character json.Marshal escapes (<, >,
// &, U+2028, U+2029). Bytes after the value are not read.
func jsonScan(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n := uint32(stack[0]), uint32(stack[1])
	b := read(mod, abi.ImportJSONScan, ptr, n)
	s := jsonScanner{b: b, next: firstScanChunk, pay: func(c int) { charge(ctx, mod, int64(c)*jsonScanCost) }}
	end := s.value()
	if end < 0 {
		stack[0] = ^uint64(0)
		return
	}
	r := uint64(end)
	if s.space {
		r |= 1 << 32
	}
	if s.escaped {
		r |= 1 << 33
	}
	stack[0] = r
}

// jsonScanner reads one JSON value from the start of b. It reads only
// b[:lim], and pays for each chunk past it (pay may stop the guest: the
// deadline, the fuel) before reading it.
type jsonScanner struct {
	b              []byte
	lim            int // b[:lim] is paid for
	next           int // the size of the next chunk
	pay            func(n int)
	space, escaped bool
}

// has reports whether b[i] may be read, paying for chunks up to it.
func (s *jsonScanner) has(i int) bool { return i < s.lim || s.extend(i) }

func (s *jsonScanner) extend(i int) bool {
	for i >= s.lim {
		if s.lim >= len(s.b) {
			return false
		}
		c := min(len(s.b)-s.lim, s.next)
		s.pay(c)
		s.lim += c
		s.next = min(2*s.next, hostChunk)
	}
	return true
}

// value returns the offset just past the value at the start of b, or -1.
// One loop with its own stack of open containers (a bit each: set for an
// object), so nesting costs no Go stack.
func (s *jsonScanner) value() int { return s.valueAt(0) }

// valueAt is value from b[i].
func (s *jsonScanner) valueAt(i int) int {
	var objects [maxJSONDepth/64 + 1]uint64
	b, depth := s.b, 0
	for {
		// A value.
		if i >= s.lim || b[i] <= ' ' {
			if i = s.ws(i); !s.has(i) {
				return -1
			}
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth >= maxJSONDepth {
				return -1
			}
			if c == '{' {
				objects[depth>>6] |= 1 << (depth & 63)
			} else {
				objects[depth>>6] &^= 1 << (depth & 63)
			}
			depth++
			if i = s.ws(i + 1); !s.has(i) {
				return -1
			}
			if b[i] != c+2 { // '{'+2 is '}', '['+2 is ']'
				if c == '{' {
					if i = s.key(i); i < 0 {
						return -1
					}
				}
				continue
			}
			i++
			depth--
		case c == '"':
			if i = s.str(i); i < 0 {
				return -1
			}
		case c == 't':
			if i = s.word(i, "true"); i < 0 {
				return -1
			}
		case c == 'f':
			if i = s.word(i, "false"); i < 0 {
				return -1
			}
		case c == 'n':
			if i = s.word(i, "null"); i < 0 {
				return -1
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = s.number(i); i < 0 {
				return -1
			}
		default:
			return -1
		}
		// After a value: close what it ends, or find the next one.
		for {
			if depth == 0 {
				return i
			}
			if i >= s.lim || b[i] <= ' ' {
				if i = s.ws(i); !s.has(i) {
					return -1
				}
			}
			object := objects[(depth-1)>>6]>>((depth-1)&63)&1 != 0
			if c := b[i]; c == ',' {
				i++
				if object {
					if i = s.key(i); i < 0 {
						return -1
					}
				}
				break
			} else if c == '}' && object || c == ']' && !object {
				i++
				depth--
				continue
			}
			return -1
		}
	}
}

// ws skips white space from b[i].
func (s *jsonScanner) ws(i int) int {
	for s.has(i) {
		switch s.b[i] {
		case ' ', '\n', '\t', '\r':
			s.space = true
			i++
		default:
			return i
		}
	}
	return i
}

// key reads an object's key and its colon from b[i] (white space around
// both), and returns where its value starts, or -1.
func (s *jsonScanner) key(i int) int {
	if i = s.ws(i); !s.has(i) || s.b[i] != '"' {
		return -1
	}
	if i = s.str(i); i < 0 {
		return -1
	}
	if i = s.ws(i); !s.has(i) || s.b[i] != ':' {
		return -1
	}
	return i + 1
}

// word reads the literal w at b[i].
func (s *jsonScanner) word(i int, w string) int {
	if !s.has(i+len(w)-1) || string(s.b[i:i+len(w)]) != w {
		return -1
	}
	return i + len(w)
}

// str reads the string at b[i] (its escapes checked; bytes >= 0x80 taken
// as they are, as encoding/json's validator takes them).
func (s *jsonScanner) str(i int) int {
	b := s.b
	j := i + 1
	for {
		for j < s.lim && jsonPlain[b[j]] {
			j++
		}
		if !s.has(j) {
			return -1
		}
		switch c := b[j]; {
		case jsonPlain[c]: // b[j] was past what was paid for
			j++
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		case c == '<' || c == '>' || c == '&':
			s.escaped = true
			j++
		case c == 0xe2: // U+2028 and U+2029 are e2 80 a8 and e2 80 a9
			if s.has(j+2) && b[j+1] == 0x80 && (b[j+2] == 0xa8 || b[j+2] == 0xa9) {
				s.escaped = true
			}
			j++
		default: // a backslash
			if !s.has(j + 1) {
				return -1
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if !s.has(j + 5) {
					return -1
				}
				for _, h := range b[j+2 : j+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				j += 6
			default:
				return -1
			}
		}
	}
}

// jsonPlain holds the bytes a string's loop passes without a look of their
// own: not '"', '\\', a control byte, or one that json.Marshal escapes
// ('<', '>', '&', 0xe2 the first byte of U+2028 and U+2029).
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c != 0xe2
	}
	return t
}()

// number reads the number at b[i] as JSON's grammar has it.
func (s *jsonScanner) number(i int) int {
	b := s.b
	if b[i] == '-' {
		i++
	}
	switch {
	case !s.has(i):
		return -1
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = s.digits(i + 1)
	default:
		return -1
	}
	if s.has(i) && b[i] == '.' {
		if !s.has(i+1) || b[i+1] < '0' || b[i+1] > '9' {
			return -1
		}
		i = s.digits(i + 1)
	}
	if s.has(i) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if s.has(i) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !s.has(i) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		i = s.digits(i)
	}
	return i
}

func (s *jsonScanner) digits(i int) int {
	for {
		for i < s.lim && s.b[i]-'0' < 10 {
			i++
		}
		if i < s.lim || !s.has(i) || s.b[i]-'0' >= 10 {
			return i
		}
	}
}
