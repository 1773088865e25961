package instrument

import "fmt"

// reader decodes the binary format; the first error sticks and ends input.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) done() bool { return r.off >= len(r.b) }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
	r.off = len(r.b)
}

func (r *reader) wrap(where string) error {
	if r.err != nil {
		return errorf("%s: %v", where, r.err)
	}
	return nil
}

// end is wrap, and also refuses bytes left after the entries: a section
// is read to its exact end.
func (r *reader) end(where string) error {
	if r.err == nil && !r.done() {
		r.err = fmt.Errorf("%d bytes after its last entry", len(r.b)-r.off)
	}
	return r.wrap(where)
}

// index reads an index and checks it against the size of its space in
// the module as written, so no index can reach what the pass adds.
func (r *reader) index(what string, n uint32) uint32 {
	i := r.u32()
	if r.err == nil && i >= n {
		r.fail("%s index %d out of range (%d)", what, i, n)
	}
	return i
}

func (r *reader) byte() byte {
	if r.off >= len(r.b) {
		r.fail("unexpected end at offset %d", r.off)
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || n > len(r.b)-r.off {
		r.fail("length %d past the end", n)
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

// leb skips one LEB128 number (at most 10 bytes) and returns its low bits.
func (r *reader) leb() uint64 {
	var v uint64
	for i := 0; i < 10; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail("integer too long")
	return 0
}

func (r *reader) u32() uint32 {
	start := r.off
	v := r.leb()
	if r.off-start > 5 || v > 0xffffffff {
		r.fail("u32 out of range")
	}
	return uint32(v)
}

func (r *reader) name() string { return string(r.bytes(int(r.u32()))) }

func (r *reader) limits() {
	flags := r.byte()
	r.leb()
	if flags&1 != 0 {
		r.leb()
	}
}

// importDesc skips an import's description, checking its type index
// against the module's types, and returns its kind (0 function, 1 table,
// 2 memory, 3 global, 4 tag).
func (r *reader) importDesc(types uint32) byte {
	kind := r.byte()
	switch kind {
	case 0x00:
		r.index("type", types)
	case 0x01:
		r.byte()
		r.limits()
	case 0x02:
		r.limits()
	case 0x03:
		r.byte()
		r.byte()
	case 0x04:
		r.byte()
		r.index("type", types)
	default:
		r.fail("unknown import kind %d", kind)
	}
	return kind
}

func appendU32(b []byte, v uint32) []byte { return appendU64(b, uint64(v)) }

func appendU64(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	return append(appendU32(b, uint32(len(s))), s...)
}

// s32 reads a signed LEB128 i32 (at most 5 bytes); ok is false when it is
// longer or out of range.
func (r *reader) s32() (int32, bool) {
	var v int64
	var shift uint
	for i := 0; i < 5; i++ {
		c := r.byte()
		if r.err != nil {
			return 0, false
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				v |= -1 << shift
			}
			if v < -1<<31 || v > 1<<31-1 {
				return 0, false
			}
			return int32(v), true
		}
	}
	return 0, false
}
