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
// The objects that hold fields (its tool, check and ctx) it reads after
// the request, again, paid for by then: in turn, not by recursion, so
// that nothing of a call's walk is allocated.
func findFields(req []byte, pay func(int), f *[wire.FieldCount][3]uint32) bool {
	todo, n := [8]heldObject{{0, uint32(len(req)), wire.RequestObject}}, 1
	for k := 0; k < n; k++ {
		h := todo[k]
		s := jsonScanner{b: req[h.start:h.end], lim: int(h.end - h.start)}
		if k == 0 {
			s.lim, s.next, s.pay = 0, hostChunk, pay
		}
		ok, seen := true, uint64(0)
		count, end := s.members(func(_ int, m [5]uint32) {
			if !ok {
				return
			}
			i, refuse := h.o.Lookup(s.b[m[0]:m[1]])
			switch {
			case m[4]&memberKeyPlain == 0 || refuse || i >= 0 && seen&(1<<i) != 0:
				ok = false
				return
			case i < 0:
				return
			}
			seen |= 1 << i
			start, end, flags := h.start+m[2], h.start+m[3], m[4]
			switch fi := h.o.Field[i]; {
			case fi < 0: // not a field: an object that holds some
			case wire.StringFields&(1<<fi) == 0:
				f[fi] = [3]uint32{start, end - start, flags}
			case flags&memberValuePlain != 0:
				f[fi] = [3]uint32{start + 1, end - start - 2, flags}
			default:
				ok = false
				return
			}
			if inner := h.o.Inner[i]; inner != nil {
				if n == len(todo) {
					ok = false // more than wire.RequestObject has
					return
				}
				todo[n] = heldObject{start, end, inner}
				n++
			}
		})
		if count < 0 || !ok || s.ws(end) != len(s.b) {
			return false
		}
	}
	return true
}

// heldObject is an object of the request whose members findFields reads:
// where it lies, and which of its keys it looks at.
type heldObject struct {
	start, end uint32
	o          *wire.FieldObject
}
