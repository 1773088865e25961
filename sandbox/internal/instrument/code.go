package instrument

import (
	"errors"
	"fmt"
)

// What an instruction means to the pass.
const (
	kPlain = iota
	kBlock
	kLoop
	kEnd
	kCall      // call: renumber
	kRefFunc   // ref.func: renumber
	kBulkMem   // memory.fill/copy/init: charge length >> BulkShift
	kBulkTable // table.fill/copy/init/grow: charge length
	kGrow      // memory.grow: charge pages * GrowPageCost
	kBranch    // br, br_if: relabelled when frames are added
	kBrTable   // br_table: relabelled when frames are added
	kIf        // if: opens a frame
	kCallIndirect
)

// Limits per function. wazero's compile time grows with the square of a
// function's blocks and loops (RATIONALE.md, "Why limits on blocks and
// loops"); these keep one function's compilation near a second.
const (
	MaxLoopsPerFunction  = 2000
	MaxFramesPerFunction = 20000
)

type instr struct {
	start, end int
	kind       int
	idx        uint32 // function index of call and ref.func, label of br and br_if
	region     int    // for kLoop: the region it opens
	outOfLine  bool   // for kLoop, and the kEnd that closes it: slow path after the loop
	bt         int    // for kLoop: where its block type starts
	cost       int64  // for kBulkTable: fuel per element
}

func (m *module) rewriteCode(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	if r.err == nil && int(n) != len(m.funcTypes) {
		return nil, errorf("code section has %d bodies for %d functions", n, len(m.funcTypes))
	}
	out := appendU32(make([]byte, 0, len(body)+len(body)/4), n)
	for i := 0; i < int(n) && r.err == nil; i++ {
		fb := r.bytes(int(r.u32()))
		if r.err != nil {
			break
		}
		typ := m.types[m.funcTypes[i]]
		nb, err := m.instrumentBody(fb, typ[0], typ[1])
		if errors.Is(err, ErrInstrument) {
			return nil, fmt.Errorf("%w (function %d)", err, int(m.funcImports)+i)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: function %d: %w", ErrInstrument, int(m.funcImports)+i, err)
		}
		out = appendU32(out, uint32(len(nb)))
		out = append(out, nb...)
	}
	if err := r.end("code section"); err != nil {
		return nil, err
	}
	return out, nil
}

// fnBody is what the decoder checks a function's instructions against.
type fnBody struct {
	m      *module
	locals uint32 // params and declared locals
	depth  int    // open frames, the function's own included
}

func (m *module) instrumentBody(b []byte, params, results int) ([]byte, error) {
	r := &reader{b: b}
	groups := r.u32()
	groupsEnd := r.off
	locals := uint64(params)
	for g := uint32(0); g < groups && r.err == nil; g++ {
		locals += uint64(r.u32())
		r.byte()
	}
	localsEnd := r.off
	if r.err != nil {
		return nil, r.err
	}
	if locals >= 1<<31 {
		return nil, errorf("too many locals")
	}
	fb := fnBody{m: m, locals: uint32(locals)}

	// Pass 1: decode every instruction, and add up each region's cost.
	var code []instr
	regions := []int64{0}
	type frame struct{ region, parent, loop int } // loop: index in code of the loop, or -1
	frames := []frame{{0, 0, -1}}
	cur := 0
	calls := false // a leaf (no calls) adds its frame without a check
	frameCount := 0
	for len(frames) > 0 {
		if r.done() {
			return nil, errorf("body ends before its last end")
		}
		fb.depth = len(frames)
		in, err := fb.decode(r)
		if err != nil {
			return nil, err
		}
		regions[cur]++
		switch in.kind {
		case kLoop, kBlock, kIf:
			if frameCount++; frameCount > MaxFramesPerFunction {
				return nil, limitf("more than %d blocks, loops and ifs", MaxFramesPerFunction)
			}
		}
		switch in.kind {
		case kLoop:
			if len(regions) > MaxLoopsPerFunction {
				return nil, limitf("more than %d loops", MaxLoopsPerFunction)
			}
			in.region = len(regions)
			regions = append(regions, 0)
			in.outOfLine = m.noParams(b, in.bt)
			frames = append(frames, frame{in.region, cur, len(code)})
			cur = in.region
		case kBlock, kIf:
			frames = append(frames, frame{cur, cur, -1})
		case kEnd:
			f := frames[len(frames)-1]
			if f.loop >= 0 {
				in.outOfLine = code[f.loop].outOfLine
			}
			cur = f.parent
			frames = frames[:len(frames)-1]
		case kCall, kCallIndirect:
			calls = true
		}
		code = append(code, in)
	}
	if !r.done() {
		return nil, errorf("code after the body's last end")
	}

	// Pass 2: emit. Two i32 locals are added: tmp for bulk lengths, my for
	// the stack counter with this function's frame.
	out := make([]byte, 0, len(b)+len(b)/3+64)
	tmp, my := fb.locals, fb.locals+1
	out = appendU32(out, groups+1)
	out = append(out, b[groupsEnd:localsEnd]...)
	out = append(out, 2, 0x7f)
	frameBytes := int64(frameBase) + slotBytes*(int64(fb.locals)+int64(results))
	if calls {
		out = m.enterFrame(out, my, frameBytes)
	}
	out = m.charge(out, regions[0])
	// added[i] is how many frames the pass put around open frame i, and
	// sums[i] the total of added[1..i]: a label that crosses frames
	// grows by what was added around them.
	sums := []uint32{0}
	relabel := func(l uint32) uint32 {
		top := len(sums) - 1 // l < depth == len(sums), checked by decode
		return l + sums[top] - sums[top-int(l)]
	}
	for _, in := range code {
		top := sums[len(sums)-1]
		switch in.kind {
		case kLoop:
			if in.outOfLine {
				// block $exit (results) loop $retry block $slow loop $L
				out = append(out, 0x02)
				out = append(out, b[in.bt:in.end]...)
				out = append(out, 0x03, 0x40, 0x02, 0x40)
				out = append(out, b[in.start:in.end]...)
				out = m.chargeOrLeave(out, regions[in.region])
				sums = append(sums, top+3)
			} else {
				out = append(out, b[in.start:in.end]...)
				out = m.charge(out, regions[in.region])
				sums = append(sums, top)
			}
		case kBlock, kIf:
			out = append(out, b[in.start:in.end]...)
			sums = append(sums, top)
		case kEnd:
			out = append(out, b[in.start:in.end]...)
			if in.outOfLine {
				// br $exit; end $slow; refill; br $retry; end $retry;
				// unreachable (the loop $retry never falls through, and
				// $exit may have results); end $exit
				out = append(out, 0x0c, 0x02, 0x0b)
				out = appendU32(append(out, 0x10), m.refillIndex)
				out = append(out, 0x0c, 0x00, 0x0b, 0x00, 0x0b)
			}
			sums = sums[:len(sums)-1]
		case kBranch:
			out = append(out, b[in.start])
			out = appendU32(out, relabel(in.idx))
		case kBrTable:
			r := &reader{b: b[:in.end], off: in.start + 1}
			n := r.u32()
			out = appendU32(append(out, 0x0e), n)
			for i := uint32(0); i <= n; i++ {
				out = appendU32(out, relabel(r.u32()))
			}
		case kCall:
			out = appendU32(append(out, 0x10), m.fn(in.idx))
			out = m.restoreFrame(out, my)
		case kCallIndirect:
			out = append(out, b[in.start:in.end]...)
			out = m.restoreFrame(out, my)
		case kRefFunc:
			out = appendU32(append(out, 0xd2), m.fn(in.idx))
		case kBulkMem:
			out = m.chargeTop(out, tmp, BulkShift, 1)
			out = append(out, b[in.start:in.end]...)
		case kBulkTable:
			out = m.chargeTop(out, tmp, 0, in.cost)
			out = append(out, b[in.start:in.end]...)
		case kGrow:
			out = m.chargeTop(out, tmp, 0, GrowPageCost)
			out = append(out, b[in.start:in.end]...)
		default:
			out = append(out, b[in.start:in.end]...)
		}
	}
	return out, nil
}

// noParams reports whether the block type at b[at:] takes no parameters: a
// loop that takes some cannot be re-entered after a refill. decode has
// checked the block type.
func (m *module) noParams(b []byte, at int) bool {
	c := b[at]
	if c == 0x40 || c >= 0x6f && c <= 0x7f {
		return true
	}
	r := &reader{b: b, off: at}
	idx := r.leb()
	return r.err == nil && idx < uint64(len(m.types)) && m.types[idx][0] == 0
}

// enterFrame adds a function's frame to the stack counter, keeps the sum in
// the local my, and traps when it is over the limit. Callers put their own
// sum back after every call (restoreFrame), so a callee's way out (return,
// a branch, the end) needs no code.
func (m *module) enterFrame(out []byte, my uint32, frameBytes int64) []byte {
	out = appendU32(append(out, 0x23), m.stackGlobal)              // global.get
	out = appendS64(append(out, 0x41), frameBytes)                 // i32.const
	out = append(out, 0x6a)                                        // i32.add
	out = appendU32(append(out, 0x22), my)                         // local.tee
	out = appendU32(append(out, 0x24), m.stackGlobal)              // global.set
	out = appendU32(append(out, 0x20), my)                         // local.get
	out = appendS64(append(out, 0x41), int64(m.opt.MaxStackBytes)) // i32.const
	return append(out, 0x4b, 0x04, 0x40, 0x00, 0x0b)               // i32.gt_u; if; unreachable; end
}

// restoreFrame puts this function's stack sum back after a call.
func (m *module) restoreFrame(out []byte, my uint32) []byte {
	out = appendU32(append(out, 0x20), my)             // local.get
	return appendU32(append(out, 0x24), m.stackGlobal) // global.set
}

// chargeOrLeave subtracts a loop's cost at its header and, when the counter
// is below zero, leaves the loop for the refill laid out after it (the label
// of the $slow block is 1 inside the loop).
func (m *module) chargeOrLeave(out []byte, cost int64) []byte {
	out = appendU32(append(out, 0x23), m.fuelGlobal) // global.get
	out = appendS64(append(out, 0x42), cost)         // i64.const
	out = append(out, 0x7d)                          // i64.sub
	out = appendU32(append(out, 0x24), m.fuelGlobal) // global.set
	out = appendU32(append(out, 0x23), m.fuelGlobal) // global.get
	return append(out, 0x42, 0x00, 0x53, 0x0d, 0x01) // i64.const 0; i64.lt_s; br_if 1
}

// charge subtracts a static cost, then refills when the counter is negative.
func (m *module) charge(out []byte, cost int64) []byte {
	out = appendU32(append(out, 0x23), m.fuelGlobal) // global.get
	out = appendS64(append(out, 0x42), cost)         // i64.const
	out = append(out, 0x7d)                          // i64.sub
	out = appendU32(append(out, 0x24), m.fuelGlobal) // global.set
	return m.check(out)
}

// chargeTop charges the i32 on top of the stack (kept there), shifted right
// by shift and multiplied by mul.
func (m *module) chargeTop(out []byte, tmp uint32, shift, mul int64) []byte {
	out = appendU32(append(out, 0x22), tmp)          // local.tee
	out = appendU32(append(out, 0x23), m.fuelGlobal) // global.get
	out = appendU32(append(out, 0x20), tmp)          // local.get
	out = append(out, 0xad)                          // i64.extend_i32_u
	if shift > 0 {
		out = appendS64(append(out, 0x42), shift)
		out = append(out, 0x88) // i64.shr_u
	}
	if mul > 1 {
		out = appendS64(append(out, 0x42), mul)
		out = append(out, 0x7e) // i64.mul
	}
	out = append(out, 0x7d)                          // i64.sub
	out = appendU32(append(out, 0x24), m.fuelGlobal) // global.set
	return m.check(out)
}

// check calls the refill import when the counter is below zero.
func (m *module) check(out []byte) []byte {
	out = appendU32(append(out, 0x23), m.fuelGlobal)  // global.get
	out = append(out, 0x42, 0x00, 0x53, 0x04, 0x40)   // i64.const 0; i64.lt_s; if
	out = appendU32(append(out, 0x10), m.refillIndex) // call refill
	return append(out, 0x0b)                          // end
}

// decode reads one instruction and its immediates, checking every type,
// function, global, local and label index against the module as written.
func (f *fnBody) decode(r *reader) (instr, error) {
	m := f.m
	types := uint32(len(m.types))
	in := instr{start: r.off}
	op := r.byte()
	switch {
	case op == 0x00 || op == 0x01 || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
	case op == 0x02:
		blockType(r, types)
		in.kind = kBlock
	case op == 0x04:
		blockType(r, types)
		in.kind = kIf
	case op == 0x03:
		in.bt = r.off
		blockType(r, types)
		in.kind = kLoop
	case op == 0x05:
	case op == 0x0b:
		in.kind = kEnd
	case op == 0x0c || op == 0x0d:
		in.kind, in.idx = kBranch, f.label(r)
	case op == 0x0e:
		in.kind = kBrTable
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			f.label(r)
		}
		f.label(r)
	case op == 0x10:
		in.kind, in.idx = kCall, r.index("function", m.funcs())
	case op == 0x11: // call_indirect
		r.index("type", types)
		r.u32()
		in.kind = kCallIndirect
	case op == 0x1c:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			r.byte()
		}
	case op >= 0x20 && op <= 0x22:
		r.index("local", f.locals)
	case op == 0x23 || op == 0x24:
		r.index("global", m.globals)
	case op == 0x25: // table.get
		r.u32()
	case op == 0x26: // table.set
		r.u32()
		m.info.WritesTablesOrSegments = true
	case op >= 0x28 && op <= 0x3e:
		r.u32()
		r.u32()
	case op == 0x3f:
		r.u32()
	case op == 0x40:
		r.u32()
		in.kind = kGrow
	case op == 0x41 || op == 0x42:
		r.leb()
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op >= 0x45 && op <= 0xc4:
	case op == 0xd0:
		r.byte()
	case op == 0xd2:
		in.kind, in.idx = kRefFunc, r.index("function", m.funcs())
	case op == 0xfc:
		switch sub := r.u32(); {
		case sub <= 7:
		case sub == 8: // memory.init
			r.u32()
			r.u32()
			in.kind = kBulkMem
		case sub == 9: // data.drop
			r.u32()
			m.info.WritesTablesOrSegments = true
		case sub == 10: // memory.copy
			r.u32()
			r.u32()
			in.kind = kBulkMem
		case sub == 11: // memory.fill
			r.u32()
			in.kind = kBulkMem
		case sub == 12 || sub == 14: // table.init, table.copy
			r.u32()
			r.u32()
			in.kind, in.cost = kBulkTable, 1
			m.info.WritesTablesOrSegments = true
		case sub == 13: // elem.drop
			r.u32()
			m.info.WritesTablesOrSegments = true
		case sub == 16: // table.size
			r.u32()
		case sub == 15: // table.grow
			r.u32()
			in.kind, in.cost = kBulkTable, TableGrowCost
			m.info.WritesTablesOrSegments = true
		case sub == 17: // table.fill
			r.u32()
			in.kind, in.cost = kBulkTable, 1
			m.info.WritesTablesOrSegments = true
		default:
			if r.err == nil {
				return in, errorf("unknown instruction 0xfc %d at offset %d", sub, in.start)
			}
		}
	case op == 0xfd:
		switch sub := r.u32(); {
		case sub <= 11 || sub == 92 || sub == 93: // loads and stores
			r.u32()
			r.u32()
		case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
			r.bytes(16)
		case sub >= 21 && sub <= 34: // extract and replace lane
			r.byte()
		case sub >= 84 && sub <= 91: // load and store lane
			r.u32()
			r.u32()
			r.byte()
		case sub <= 255:
		default:
			if r.err == nil {
				return in, errorf("unknown instruction 0xfd %d at offset %d", sub, in.start)
			}
		}
	default:
		return in, errorf("unknown instruction 0x%02x at offset %d", op, in.start)
	}
	in.end = r.off
	if r.err != nil {
		return in, r.err
	}
	return in, nil
}

// label reads a branch label and checks it names an open frame.
func (f *fnBody) label(r *reader) uint32 {
	l := r.u32()
	if r.err == nil && uint64(l) >= uint64(f.depth) {
		r.fail("label %d with %d frames open", l, f.depth)
	}
	return l
}

// blockType reads a block type: empty, a value type, or a type index (a
// non-negative s33) that must name one of the module's own types.
func blockType(r *reader, types uint32) {
	if r.done() {
		r.fail("unexpected end")
		return
	}
	c := r.b[r.off]
	if c == 0x40 || c >= 0x6f && c <= 0x7f {
		r.off++
		return
	}
	start := r.off
	var v uint64
	for i := 0; ; i++ {
		b := r.byte()
		if r.err != nil {
			return
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			if b&0x40 != 0 && r.err == nil {
				r.err = fmt.Errorf("%w: block type at offset %d is neither a value type nor a type index", errStrict, start)
				r.off = len(r.b)
			}
			break
		}
		if i == 4 {
			r.fail("block type at offset %d is too long", start)
			return
		}
	}
	if r.err == nil && v >= uint64(types) {
		r.fail("type index %d out of range (%d)", v, types)
	}
}
