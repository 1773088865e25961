package instrument

import (
	"fmt"
)

// decode reads one instruction and its immediates, checking every type,
// function, global, local and label index against the module as written.
func (f *fnBody) decode(r *reader) (instr, error) {
	m := f.m
	types := uint32(len(m.types))
	in := instr{start: r.Off}
	op := r.Byte()
	switch {
	case op == 0x00 || op == 0x01 || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
	case op == 0x02:
		blockType(r, types)
		in.kind = kBlock
	case op == 0x04:
		blockType(r, types)
		in.kind = kIf
	case op == 0x03:
		in.bt = r.Off
		blockType(r, types)
		in.kind = kLoop
	case op == 0x05:
		in.kind = kElse
	case op == 0x0b:
		in.kind = kEnd
	case op == 0x0c || op == 0x0d:
		in.kind, in.idx = kBranch, f.label(r)
	case op == 0x0e:
		in.kind = kBrTable
		for n := r.U32(); n > 0 && r.Err == nil; n-- {
			f.label(r)
		}
		f.label(r)
	case op == 0x10:
		in.kind, in.idx = kCall, r.Index("function", m.funcs())
	case op == 0x11: // call_indirect
		r.Index("type", types)
		r.U32()
		in.kind = kCallIndirect
	case op == 0x1c:
		for n := r.U32(); n > 0 && r.Err == nil; n-- {
			r.Byte()
		}
	case op >= 0x20 && op <= 0x22:
		r.Index("local", f.locals)
	case op == 0x23 || op == 0x24:
		r.Index("global", m.globals)
	case op == 0x25: // table.get
		r.U32()
	case op == 0x26: // table.set
		r.U32()
		m.info.WritesTablesOrSegments = true
	case op >= 0x28 && op <= 0x3e:
		r.U32()
		r.U32()
	case op == 0x3f:
		r.U32()
	case op == 0x40:
		r.U32()
		in.kind = kGrow
	case op == 0x41 || op == 0x42:
		r.Leb()
	case op == 0x43:
		r.Bytes(4)
	case op == 0x44:
		r.Bytes(8)
	case op >= 0x45 && op <= 0xc4:
	case op == 0xd0:
		r.Byte()
	case op == 0xd2:
		in.kind, in.idx = kRefFunc, r.Index("function", m.funcs())
	case op == 0xfc:
		switch sub := r.U32(); {
		case sub <= 7:
		case sub == 8: // memory.init
			r.U32()
			r.U32()
			in.kind, in.bulk = kBulkMem, bulkInit
		case sub == 9: // data.drop
			r.U32()
			m.info.WritesTablesOrSegments = true
		case sub == 10: // memory.copy
			r.U32()
			r.U32()
			in.kind, in.bulk = kBulkMem, bulkCopy
		case sub == 11: // memory.fill
			r.U32()
			in.kind, in.bulk = kBulkMem, bulkFill
		case sub == 12 || sub == 14: // table.init, table.copy
			r.U32()
			r.U32()
			in.kind, in.cost = kBulkTable, 1
			m.info.WritesTablesOrSegments = true
		case sub == 13: // elem.drop
			r.U32()
			m.info.WritesTablesOrSegments = true
		case sub == 16: // table.size
			r.U32()
		case sub == 15: // table.grow
			r.U32()
			in.kind, in.cost = kBulkTable, TableGrowCost
			m.info.WritesTablesOrSegments = true
		case sub == 17: // table.fill
			r.U32()
			in.kind, in.cost = kBulkTable, 1
			m.info.WritesTablesOrSegments = true
		default:
			if r.Err == nil {
				return in, errorf("unknown instruction 0xfc %d at offset %d", sub, in.start)
			}
		}
	case op == 0xfd:
		switch sub := r.U32(); {
		case sub <= 11 || sub == 92 || sub == 93: // loads and stores
			r.U32()
			r.U32()
		case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
			r.Bytes(16)
		case sub >= 21 && sub <= 34: // extract and replace lane
			r.Byte()
		case sub >= 84 && sub <= 91: // load and store lane
			r.U32()
			r.U32()
			r.Byte()
		case sub <= 255:
		default:
			if r.Err == nil {
				return in, errorf("unknown instruction 0xfd %d at offset %d", sub, in.start)
			}
		}
	default:
		return in, errorf("unknown instruction 0x%02x at offset %d", op, in.start)
	}
	in.end = r.Off
	if r.Err != nil {
		return in, r.Err
	}
	return in, nil
}

// label reads a branch label and checks it names an open frame.
func (f *fnBody) label(r *reader) uint32 {
	l := r.U32()
	if r.Err == nil && uint64(l) >= uint64(f.depth) {
		r.Fail("label %d with %d frames open", l, f.depth)
	}
	return l
}

// blockType reads a block type: empty, a value type, or a type index (a
// non-negative s33) that must name one of the module's own types.
func blockType(r *reader, types uint32) {
	if r.Done() {
		r.Fail("unexpected end")
		return
	}
	c := r.B[r.Off]
	if c == 0x40 || c >= 0x6f && c <= 0x7f {
		r.Off++
		return
	}
	start := r.Off
	var v uint64
	for i := 0; ; i++ {
		b := r.Byte()
		if r.Err != nil {
			return
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			if b&0x40 != 0 && r.Err == nil {
				r.Err = fmt.Errorf("%w: block type at offset %d is neither a value type nor a type index", errStrict, start)
				r.Off = len(r.B)
			}
			break
		}
		if i == 4 {
			r.Fail("block type at offset %d is too long", start)
			return
		}
	}
	if r.Err == nil && v >= uint64(types) {
		r.Fail("type index %d out of range (%d)", v, types)
	}
}
