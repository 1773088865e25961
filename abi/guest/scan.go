package guest

import "encoding/binary"

// The scanner: it checks that bytes are one valid JSON value and finds
// where it ends, without building anything. The parser (decode.go) uses it
// for the values it does not decode, and an echo's output that is its
// input is known by it to need no second look. Inside packd, packd scans
// them instead (kindgi.json_scan, wasip1.go); this one reads them outside
// WebAssembly (go test).

const maxDepth = 1000

// scan reads one JSON value from b at i and returns where it ends, or -1
// when it is not valid JSON (or nests deeper than maxDepth). It sets
// *space when it skips white space outside strings, and *escaped when a
// string holds a character json.Marshal escapes (<, >, &, U+2028,
// U+2029); bytes >= 0x80 are taken as they are, as encoding/json's
// validator takes them.
//
// It is one loop over the bytes with its own stack: in a Go guest every
// function call and every turn of a loop costs a trip through the
// function's dispatch loop, so a recursive reader with a call per value
// and per white-space check was most of a pooled echo of structured input
// (about 1,000 fuel a byte; this is a tenth of that).
func scan(b []byte, i int, space, escaped *bool) int {
	var objects [maxDepth/64 + 1]uint64 // bit d: the container at depth d is an object
	depth, n := 0, len(b)
	var c byte
value:
	for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
		*space = true
	}
	if i >= n {
		return -1
	}
	switch c = b[i]; {
	case c == '{':
		if depth >= maxDepth {
			return -1
		}
		objects[depth>>6] |= 1 << (depth & 63)
		depth++
		i++
		for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
			*space = true
		}
		if i < n && b[i] == '}' {
			i++
			depth--
			goto after
		}
		goto key
	case c == '[':
		if depth >= maxDepth {
			return -1
		}
		objects[depth>>6] &^= 1 << (depth & 63)
		depth++
		i++
		for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
			*space = true
		}
		if i < n && b[i] == ']' {
			i++
			depth--
			goto after
		}
		goto value
	case c == '"':
		if i = scanString(b, i, escaped); i < 0 {
			return -1
		}
		goto after
	case c == 't':
		if n-i < 4 || string(b[i:i+4]) != "true" {
			return -1
		}
		i += 4
		goto after
	case c == 'f':
		if n-i < 5 || string(b[i:i+5]) != "false" {
			return -1
		}
		i += 5
		goto after
	case c == 'n':
		if n-i < 4 || string(b[i:i+4]) != "null" {
			return -1
		}
		i += 4
		goto after
	case c == '-' || c >= '0' && c <= '9':
		if i = scanNumber(b, i); i < 0 {
			return -1
		}
		goto after
	}
	return -1
key:
	if i >= n || b[i] != '"' {
		return -1
	}
	if i = scanString(b, i, escaped); i < 0 {
		return -1
	}
	for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
		*space = true
	}
	if i >= n || b[i] != ':' {
		return -1
	}
	i++
	goto value
after:
	if depth == 0 {
		return i
	}
	for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
		*space = true
	}
	if i >= n {
		return -1
	}
	switch c, isObject := b[i], objects[(depth-1)>>6]&(1<<((depth-1)&63)) != 0; {
	case c == ',':
		i++
		if isObject {
			for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
				i++
				*space = true
			}
			goto key
		}
		goto value
	case c == '}' && isObject, c == ']' && !isObject:
		i++
		depth--
		goto after
	}
	return -1
}

// scanString reads the valid JSON string at b[i] (escapes checked; bytes
// >= 0x80 taken as they are, as encoding/json's validator does) and
// returns where it ends, or -1.
func scanString(b []byte, i int, escaped *bool) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	j := i + 1
	for {
		// A byte a step through a table for the first 16 (most strings
		// in structured input are shorter), then 8 a step.
		end := min(j+16, len(b))
		for j < end && stringPlain[b[j]] {
			j++
		}
		if j == end && j < len(b) {
			for len(b)-j >= 8 && plain8(b[j:]) {
				j += 8
			}
			continue
		}
		if j >= len(b) {
			return -1
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		case c == '<' || c == '>' || c == '&':
			*escaped = true
		case c == 0xe2:
			if j+2 < len(b) && b[j+1] == 0x80 && (b[j+2] == 0xa8 || b[j+2] == 0xa9) {
				*escaped = true
			}
		case c == '\\':
			j++
			if j >= len(b) {
				return -1
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return -1
				}
				for _, h := range b[j+1 : j+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				j += 4
			default:
				return -1
			}
		}
		j++
	}
}

// stringPlain holds the bytes that need no look of their own inside a
// string (plain8's test, a byte at a time).
var stringPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c != 0xe2
	}
	return t
}()

// scanNumber reads the number at b[i] as JSON's grammar has it and returns
// where it ends, or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i
}

// marshalsAsIs reports whether json.Marshal would return b (a handler's
// json.RawMessage output) unchanged: valid, without white space outside
// strings (Marshal compacts), and without the characters Marshal escapes
// (<, >, &, U+2028, U+2029).
func marshalsAsIs(b []byte) bool {
	p := parser{b: b}
	return p.skip() && p.i == len(b) && !p.space && !p.escaped
}

// plain8 reports whether none of the first 8 bytes of b needs a look of
// its own inside a string: no '"' or '\\', none below 0x20, none that
// json.Marshal escapes ('<', '>', '&', and 0xE2, the first byte of U+2028
// and U+2029). One 8-byte load and a few word operations (each test has no
// false negatives; a false positive only sends the bytes to the byte
// loop): in a Go guest every turn of a loop is a jump through its
// function's dispatch loop, so a string's bytes are read 8 a turn.
func plain8(b []byte) bool {
	x := binary.LittleEndian.Uint64(b)
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// Written out: a loop over the six would not be unrolled.
	q, bs, lt, gt, amp, e2 := x^(ones*'"'), x^(ones*'\\'), x^(ones*'<'), x^(ones*'>'), x^(ones*'&'), x^(ones*0xe2)
	has := (x - ones*0x20) &^ x // bytes below 0x20
	has |= (q - ones) &^ q
	has |= (bs - ones) &^ bs
	has |= (lt - ones) &^ lt
	has |= (gt - ones) &^ gt
	has |= (amp - ones) &^ amp
	has |= (e2 - ones) &^ e2
	return has&highs == 0
}
