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
// memory, and pays for it as json_members does, a chunk at a time before
// it reads it, up to 64 KiB, each after a look at the call's context (the
// tool, check and ctx it reads again are paid for by then).
func requestFields(ctx context.Context, mod api.Module, stack []uint64) {
	out, n := uint32(stack[0]), min(uint32(stack[1]), wire.FieldCount)
	w := read(mod, abi.ImportRequestFields, out, n*wire.FieldSize)
	pay := func(c int) { charge(ctx, mod, int64(c)*jsonScanCost) }
	var f [wire.FieldCount][3]uint32
	if !findFields(stateFrom(ctx).request, pay, &f) {
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

// findFields reads the request req (one object, white space around it
// allowed), paying for it as it reads it, and writes where its fields lie
// in f; false when it is not in the shape wire.RequestFields describes.
func findFields(req []byte, pay func(int), f *[wire.FieldCount][3]uint32) bool {
	s := jsonScanner{b: req, next: hostChunk, pay: pay}
	end := s.fields(0, wire.RequestObject, f)
	return end >= 0 && s.ws(end) == len(req)
}

// fields reads the object at the start of s.b, which lies at base in the
// request, writes where the fields of o lie in f, and returns where the
// object ends; -1 when it is not in the shape wire.RequestFields
// describes. The objects of o.Inner it reads again, paid for already.
func (s *jsonScanner) fields(base uint32, o *wire.FieldObject, f *[wire.FieldCount][3]uint32) int {
	b := s.b
	ok, seen := true, uint64(0)
	count, end := s.members(func(_ int, m [5]uint32) {
		if !ok {
			return
		}
		i, refuse := o.Lookup(b[m[0]:m[1]])
		switch {
		case m[4]&memberKeyPlain == 0 || refuse || i >= 0 && seen&(1<<i) != 0:
			ok = false
			return
		case i < 0:
			return
		}
		seen |= 1 << i
		start, end, flags := m[2], m[3], m[4]
		switch fi := o.Field[i]; {
		case fi < 0: // not a field: the object that holds some
		case wire.StringFields&(1<<fi) == 0:
			f[fi] = [3]uint32{base + start, end - start, flags}
		case flags&memberValuePlain != 0:
			f[fi] = [3]uint32{base + start + 1, end - start - 2, flags}
		default:
			ok = false
			return
		}
		if inner := o.Inner[i]; inner != nil {
			in := jsonScanner{b: b[start:end], lim: int(end - start)}
			ok = in.fields(base+start, inner, f) == len(in.b)
		}
	})
	if count < 0 || !ok {
		return -1
	}
	return end
}
