package sandbox

import (
	"context"
	"encoding/binary"

	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/abi"
)

// The json_members import: reads the members of the JSON object at the
// start of a range of guest memory, checking it as json_scan does, and
// writes where each key and value lies. A Go guest walking a request's
// envelope and its ctx a byte at a time spent about 29,000 of the 35,000
// units of fuel of a pooled echo call there (5 µs); the guest now looks
// only at the few keys.

// memberSize is what json_members writes for each member: five
// little-endian u32, the key's start and end (inside its quotes), the
// value's start and end (offsets from ptr) and the member's flags.
const memberSize = 20

// A member's flags.
const (
	memberKeyPlain     = 1 << 0 // the key's bytes are 0x20-0x7f, no backslash: it says what it is
	memberValuePlain   = 1 << 1 // the value is a string whose bytes are
	memberValueSpace   = 1 << 2 // the value holds white space outside strings
	memberValueEscaped = 1 << 3 // a string in the value holds what json.Marshal escapes
)

// jsonMembers answers json_members(ptr, len, out, cap) -> i64: -1 when
// [ptr, ptr+len) does not start with one valid JSON object (white space
// before it allowed) whose values nest at most maxJSONDepth deep; else the number of
// its members (low 32 bits) and the offset just past it (high 32 bits),
// having written the first cap of its members at out, memberSize bytes
// each. [out, out+cap*memberSize) must be in memory and must not overlap
// the range read. Bytes after the object are not read. It pays as
// json_scan does, for the bytes it reads: a member takes at least four
// (`"":0,`), 64 units, which pays for writing its 20 bytes many times.
func jsonMembers(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n, out, capacity := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	size := uint64(capacity) * memberSize // in 64 bits: 32 would wrap (jsonmemberswrap.wat)
	if size > uint64(mod.Memory().Size()) {
		panic(&ABIError{Func: abi.ImportJSONMembers, Reason: oob(out, uint32(min(size, 1<<32-1)), mod.Memory().Size())})
	}
	w := read(mod, abi.ImportJSONMembers, out, uint32(size))
	b := read(mod, abi.ImportJSONMembers, ptr, n)
	if size > 0 && n > 0 && uint64(out) < uint64(ptr)+uint64(n) && uint64(ptr) < uint64(out)+size {
		panic(&ABIError{Func: abi.ImportJSONMembers, Reason: "the members' range overlaps the object's"})
	}
	s := jsonScanner{b: b, next: firstScanChunk, pay: func(c int) { charge(ctx, mod, int64(c)*jsonScanCost) }}
	count, end := s.members(func(k int, m [5]uint32) {
		if k >= int(capacity) {
			return
		}
		for j, v := range m {
			binary.LittleEndian.PutUint32(w[k*memberSize+4*j:], v)
		}
	})
	if count < 0 {
		stack[0] = ^uint64(0)
		return
	}
	stack[0] = uint64(end)<<32 | uint64(count)
}

// members reads the object at the start of b and hands each member to
// put, in order: its index and its key's start and end, its value's start
// and end, and its flags. It returns how many members the object has and
// where it ends, or -1.
func (s *jsonScanner) members(put func(k int, m [5]uint32)) (count, end int) {
	b := s.b
	i := s.ws(0)
	if !s.has(i) || b[i] != '{' {
		return -1, 0
	}
	if i = s.ws(i + 1); !s.has(i) {
		return -1, 0
	}
	if b[i] == '}' {
		return 0, i + 1
	}
	for {
		if b[i] != '"' {
			return -1, 0
		}
		ks := i
		if i = s.str(i); i < 0 {
			return -1, 0
		}
		ke := i
		if i = s.ws(i); !s.has(i) || b[i] != ':' {
			return -1, 0
		}
		if i = s.ws(i + 1); !s.has(i) {
			return -1, 0
		}
		vs := i
		s.space, s.escaped = false, false
		if b[i] == '"' { // most are strings: valueAt's stack of containers is not needed
			i = s.str(i)
		} else {
			i = s.valueAt(i)
		}
		if i < 0 {
			return -1, 0
		}
		var flags uint32
		if printable(b[ks+1 : ke-1]) {
			flags |= memberKeyPlain
		}
		if b[vs] == '"' && printable(b[vs+1:i-1]) {
			flags |= memberValuePlain
		}
		if s.space {
			flags |= memberValueSpace
		}
		if s.escaped {
			flags |= memberValueEscaped
		}
		put(count, [5]uint32{uint32(ks + 1), uint32(ke - 1), uint32(vs), uint32(i), flags})
		count++
		if i = s.ws(i); !s.has(i) {
			return -1, 0
		}
		switch b[i] {
		case ',':
			if i = s.ws(i + 1); !s.has(i) {
				return -1, 0
			}
			continue
		case '}':
			return count, i + 1
		}
		return -1, 0
	}
}

// printable reports whether a string's contents (between its quotes) are
// bytes 0x20-0x7f without a backslash: what it says is its bytes.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}
