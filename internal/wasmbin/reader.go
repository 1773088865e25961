// Package wasmbin reads and writes the WebAssembly binary format's
// numbers, names and vectors: the one reader of sections that both
// sandbox's instrumentation and the language runtimes' module builder
// (WithBundle) use.
package wasmbin

import "fmt"

// Reader decodes the binary format from B at Off; the first error sticks
// in Err and ends input.
type Reader struct {
	B   []byte
	Off int
	Err error
}

// Done says every byte has been read (or an error ended input).
func (r *Reader) Done() bool { return r.Off >= len(r.B) }

// Fail records the first error and ends input.
func (r *Reader) Fail(format string, args ...any) {
	if r.Err == nil {
		r.Err = fmt.Errorf(format, args...)
	}
	r.Off = len(r.B)
}

// Index reads an index and checks it against the size n of its space.
func (r *Reader) Index(what string, n uint32) uint32 {
	i := r.U32()
	if r.Err == nil && i >= n {
		r.Fail("%s index %d out of range (%d)", what, i, n)
	}
	return i
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.Off >= len(r.B) {
		r.Fail("unexpected end at offset %d", r.Off)
		return 0
	}
	c := r.B[r.Off]
	r.Off++
	return c
}

// Bytes reads n bytes (not copied).
func (r *Reader) Bytes(n int) []byte {
	if n < 0 || n > len(r.B)-r.Off {
		r.Fail("length %d past the end", n)
		return nil
	}
	b := r.B[r.Off : r.Off+n]
	r.Off += n
	return b
}

// Vec reads a vector of bytes: its length, then its bytes.
func (r *Reader) Vec() []byte { return r.Bytes(int(r.U32())) }

// Leb skips one LEB128 number (at most 10 bytes) and returns its low bits.
func (r *Reader) Leb() uint64 {
	var v uint64
	for i := 0; i < 10; i++ {
		c := r.Byte()
		if r.Err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v
		}
	}
	r.Fail("integer too long")
	return 0
}

// U32 reads an unsigned LEB128 u32 (at most 5 bytes).
func (r *Reader) U32() uint32 {
	start := r.Off
	v := r.Leb()
	if r.Off-start > 5 || v > 0xffffffff {
		r.Fail("u32 out of range")
	}
	return uint32(v)
}

// Name reads a name: its length, then its bytes.
func (r *Reader) Name() string { return string(r.Vec()) }

// Limits skips a limits: its flags, its minimum and, when flag 1 says
// so, its maximum.
func (r *Reader) Limits() {
	flags := r.Byte()
	r.Leb()
	if flags&1 != 0 {
		r.Leb()
	}
}

// ImportDesc skips an import's description, checking its type index
// against the module's types, and returns its kind (0 function, 1 table,
// 2 memory, 3 global, 4 tag).
func (r *Reader) ImportDesc(types uint32) byte {
	kind := r.Byte()
	switch kind {
	case 0x00:
		r.Index("type", types)
	case 0x01:
		r.Byte()
		r.Limits()
	case 0x02:
		r.Limits()
	case 0x03:
		r.Byte()
		r.Byte()
	case 0x04:
		r.Byte()
		r.Index("type", types)
	default:
		r.Fail("unknown import kind %d", kind)
	}
	return kind
}

// S32 reads a signed LEB128 i32 (at most 5 bytes); ok is false when it is
// longer or out of range.
func (r *Reader) S32() (int32, bool) {
	var v int64
	var shift uint
	for i := 0; i < 5; i++ {
		c := r.Byte()
		if r.Err != nil {
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

// Section is one section of a module: its id, its contents, and the whole
// of it as written (id, size and contents).
type Section struct {
	ID   byte
	Body []byte
	Raw  []byte
}

// Sections splits a WebAssembly 1.0 module into its sections, in order.
func Sections(wasm []byte) ([]Section, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" || string(wasm[4:8]) != "\x01\x00\x00\x00" {
		return nil, fmt.Errorf("not a WebAssembly 1.0 module")
	}
	var out []Section
	r := &Reader{B: wasm, Off: 8}
	for !r.Done() {
		start := r.Off
		id := r.Byte()
		size := r.U32()
		if r.Err != nil {
			return nil, fmt.Errorf("section at %d: %w", start, r.Err)
		}
		body := r.Bytes(int(size))
		if r.Err != nil {
			return nil, fmt.Errorf("section at %d runs past the end", start)
		}
		out = append(out, Section{ID: id, Body: body, Raw: wasm[start:r.Off]})
	}
	return out, nil
}

// Custom is the payload of wasm's first custom section named name, or nil
// when it has none (or is not a module).
func Custom(wasm []byte, name string) []byte {
	sections, err := Sections(wasm)
	if err != nil {
		return nil
	}
	for _, s := range sections {
		if s.ID != 0 {
			continue
		}
		r := Reader{B: s.Body}
		if n := r.Name(); r.Err == nil && n == name {
			return s.Body[r.Off:]
		}
	}
	return nil
}
