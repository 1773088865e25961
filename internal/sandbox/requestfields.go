package sandbox

import (
	"context"
	"encoding/binary"

	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/abi/guest/wire"
	"github.com/kindgi/packd/internal/ojson"
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
	var f fieldSpans
	switch st := stateFrom(ctx); {
	case st.fields != nil:
		// Paid for as findFields pays for a request it reads to its end.
		for paid := 0; paid < len(st.request); paid += hostChunk {
			pay(min(hostChunk, len(st.request)-paid))
		}
		f = *st.fields
	case !findFields(st.request, pay, &f):
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
func findFields(req []byte, pay func(int), f *fieldSpans) bool {
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

// fieldSpans is where each field of a request lies (wire.RequestFields,
// in order): three u32 each, as request_fields writes them.
type fieldSpans [wire.FieldCount][3]uint32

// InvokeRequest is the request of a tool call whose message (Body) is
// body, which abi.EncodeInvokeMarked made of input and ctx with the marks
// m: with where its fields lie, so that its request_fields need not read
// it (invokeFields).
func InvokeRequest(body []byte, m abi.InvokeMarks, input, ctx any) Request {
	return Request{Body: body, fields: invokeFields(body, m, input, ctx)}
}

// invokeFields is what request_fields answers for the message body,
// found from its marks m and the values rather than by reading body:
// about a microsecond of a small call, and all of the reading of a large
// input. Nil when the message is not plainly in the shape request_fields answers
// (a key or a string field that is not plain, a ctx that is not an object
// of at most abi.MaxMarkedCtx members, a value nested deeper than
// json_scan reads, one ojson writes as it is given); request_fields then
// reads it, as it reads any other, and answers what it finds. Where it is
// not nil it is what findFields finds (FuzzInvokeFields holds them to it):
// a replay, whose request_fields reads the recorded message, answers the
// same.
func invokeFields(body []byte, m abi.InvokeMarks, input, ctx any) *fieldSpans {
	if uint64(len(body)) > 1<<32-1 || m.CtxMembers < 0 || !plainValue(input, 0) || !plainValue(ctx, 0) {
		return nil
	}
	f := new(fieldSpans)
	str := func(field int, at [2]uint32) bool {
		s := body[at[0]:at[1]]
		if !printable(s) {
			return false
		}
		f[field] = [3]uint32{at[0], at[1] - at[0], memberKeyPlain | memberValuePlain | escapedFlag(s)}
		return true
	}
	value := func(field int, at [2]uint32) {
		v := body[at[0]:at[1]]
		flags := memberKeyPlain | escapedFlag(v)
		if len(v) >= 2 && v[0] == '"' && printable(v[1:len(v)-1]) {
			flags |= memberValuePlain
		}
		f[field] = [3]uint32{at[0], at[1] - at[0], flags}
	}
	if !str(wire.FieldKind, m.Kind) || !str(wire.FieldToolID, m.ToolID) || m.Version[1] > 0 && !str(wire.FieldToolVersion, m.Version) {
		return nil
	}
	value(wire.FieldInput, m.Input)
	value(wire.FieldCtx, m.Ctx)
	o := ctxObject
	var seen uint64
	for i := range m.CtxMembers {
		key := body[m.CtxKeys[i][0]:m.CtxKeys[i][1]]
		k, refuse := o.Lookup(key)
		switch {
		case !printable(key) || refuse || k >= 0 && seen&(1<<k) != 0:
			return nil
		case k < 0:
			continue
		}
		seen |= 1 << k
		switch field := o.Field[k]; {
		case field < 0 || o.Inner[k] != nil: // an object that holds fields: none in ctx
			return nil
		case wire.StringFields&(1<<field) != 0:
			at := m.CtxVals[i]
			if body[at[0]] != '"' || !str(field, [2]uint32{at[0] + 1, at[1] - 1}) {
				return nil
			}
		default:
			value(field, m.CtxVals[i])
		}
	}
	return f
}

// ctxObject is the ctx of wire.RequestObject: the keys request_fields
// reads in a request's ctx.
var ctxObject = func() *wire.FieldObject {
	i, _ := wire.RequestObject.Lookup([]byte("ctx"))
	return wire.RequestObject.Inner[i]
}()

// escapedFlag is memberValueEscaped when the JSON value v, as ojson
// writes it, holds in a string what json.Marshal escapes (<, >, &,
// U+2028, U+2029): outside its strings ojson writes none of those bytes.
func escapedFlag(v []byte) uint32 {
	i := 0
	for ; i+8 <= len(v); i += 8 { // eight bytes at a time to the first word that may hold one
		x := binary.LittleEndian.Uint64(v[i:])
		if hasByte(x, '<')|hasByte(x, '>')|hasByte(x, '&')|hasByte(x, 0xe2) != 0 {
			break
		}
	}
	for ; i < len(v); i++ {
		switch c := v[i]; {
		case c == '<' || c == '>' || c == '&':
			return memberValueEscaped
		case c == 0xe2 && i+2 < len(v) && v[i+1] == 0x80 && (v[i+2] == 0xa8 || v[i+2] == 0xa9):
			return memberValueEscaped
		}
	}
	return 0
}

// hasByte is not 0 when a byte of x is c (exact as a whole: a borrow only
// ever marks a byte above one that is c).
func hasByte(x uint64, c byte) uint64 {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	y := x ^ lsb*uint64(c)
	return (y - lsb) &^ y & msb
}

// plainValue reports whether ojson writes v compact, as json_scan reads
// it: of ojson's own types, json.RawMessage (written as given) aside,
// and nested at most maxJSONDepth deep (depth: the arrays and objects
// around v).
func plainValue(v any, depth int) bool {
	switch x := v.(type) {
	case nil, bool, float64, int, string:
		return true
	case []string:
		return depth < maxJSONDepth
	case []any:
		if depth >= maxJSONDepth {
			return false
		}
		for _, e := range x {
			if !plainValue(e, depth+1) {
				return false
			}
		}
		return true
	case *ojson.Object:
		if depth >= maxJSONDepth {
			return false
		}
		for _, e := range x.Vals {
			if !plainValue(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
