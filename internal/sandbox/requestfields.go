package sandbox

import (
	"context"
	"encoding/binary"

	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/abi/guest/wire"
)

// The request_fields import: where each field of the call's request lies
// (wire.RequestFields), found natively in one call. A Go guest finding
// them with json_members (the envelope, then its tool, then its ctx) and
// matching and checking each key and value in its own code spent about
// 14,000 of the 19,800 units of fuel of a pooled echo call there.

// requestFields answers request_fields(out, cap) -> i32: -1 when the
// request is not in the shape wire.RequestFields describes; else
// wire.FieldCount, having written the first cap of the fields at out,
// wire.FieldSize bytes each. It reads the request packd holds, not guest
// memory, and pays for all of the request's bytes, at json_members'
// price, before it reads them (its tool, check and ctx it reads twice; a
// request is as large as packd let it be).
func requestFields(ctx context.Context, mod api.Module, stack []uint64) {
	out, n := uint32(stack[0]), min(uint32(stack[1]), wire.FieldCount)
	w := read(mod, abi.ImportRequestFields, out, n*wire.FieldSize)
	req := stateFrom(ctx).request
	charge(ctx, mod, int64(len(req))*jsonScanCost)
	var f [wire.FieldCount][3]uint32
	if !findFields(req, wire.RequestObject, &f) {
		stack[0] = api.EncodeI32(-1)
		return
	}
	for i := range n {
		for j, v := range f[i] {
			binary.LittleEndian.PutUint32(w[i*wire.FieldSize+4*uint32(j):], v)
		}
	}
	stack[0] = api.EncodeI32(wire.FieldCount)
}

// findFields reads the object that is all of b (white space around it
// allowed) and writes where the fields of o lie in f; false when b is not
// in the shape wire.RequestFields describes.
func findFields(b []byte, o *wire.FieldObject, f *[wire.FieldCount][3]uint32) bool {
	s := jsonScanner{b: b, lim: len(b)}
	end := s.fields(0, o, f)
	if end < 0 {
		return false
	}
	for _, c := range b[end:] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// fields reads the object at b[i] (white space before it allowed) as
// members does, writing where the fields of o lie in f, and returns the
// offset just past it; -1 when it is not in the shape wire.RequestFields
// describes. The objects of o.Inner it reads as it finds them, once.
// Its white space and escapes count for the value that holds it.
func (s *jsonScanner) fields(i int, o *wire.FieldObject, f *[wire.FieldCount][3]uint32) int {
	b := s.b
	if i = s.ws(i); !s.has(i) || b[i] != '{' {
		return -1
	}
	if i = s.ws(i + 1); !s.has(i) {
		return -1
	}
	if b[i] == '}' {
		return i + 1
	}
	var seen uint64
	for {
		if b[i] != '"' {
			return -1
		}
		ks := i
		if i = s.str(i); i < 0 || !printable(b[ks+1:i-1]) {
			return -1
		}
		k, refuse := o.Lookup(b[ks+1 : i-1])
		if refuse || k >= 0 && seen&(1<<k) != 0 {
			return -1
		}
		if i = s.ws(i); !s.has(i) || b[i] != ':' {
			return -1
		}
		if i = s.ws(i + 1); !s.has(i) {
			return -1
		}
		vs := i
		space, escaped := s.space, s.escaped
		s.space, s.escaped = false, false
		switch {
		case k >= 0 && o.Inner[k] != nil:
			i = s.fields(i, o.Inner[k], f)
		case b[i] == '"':
			i = s.str(i)
		default:
			i = s.valueAt(i)
		}
		if i < 0 {
			return -1
		}
		if k >= 0 {
			seen |= 1 << k
			if !s.field(o.Field[k], vs, i, f) {
				return -1
			}
		}
		s.space, s.escaped = space || s.space, escaped || s.escaped
		if i = s.ws(i); !s.has(i) {
			return -1
		}
		switch b[i] {
		case ',':
			if i = s.ws(i + 1); !s.has(i) {
				return -1
			}
			continue
		case '}':
			return i + 1
		}
		return -1
	}
}

// field writes where field fi (-1: none) lies, its value b[start:end]
// just read; false when a string field's value is not a plain string.
func (s *jsonScanner) field(fi, start, end int, f *[wire.FieldCount][3]uint32) bool {
	if fi < 0 {
		return true
	}
	var flags uint32 = memberKeyPlain
	if s.b[start] == '"' && printable(s.b[start+1:end-1]) {
		flags |= memberValuePlain
	}
	if s.space {
		flags |= memberValueSpace
	}
	if s.escaped {
		flags |= memberValueEscaped
	}
	if wire.StringFields&(1<<fi) == 0 {
		f[fi] = [3]uint32{uint32(start), uint32(end - start), flags}
		return true
	}
	if flags&memberValuePlain == 0 {
		return false
	}
	f[fi] = [3]uint32{uint32(start + 1), uint32(end - start - 2), flags}
	return true
}
