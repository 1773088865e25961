package instrument

import (
	"errors"
	"fmt"
	"github.com/kindgi/packd/internal/wasmbin"
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
	kElse
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
	seg        int    // for kLoop, kBlock, kIf, kElse and kEnd: the segment that starts after it (-1: none)
	outOfLine  bool   // for kLoop, and the kEnd that closes it: slow path after the loop
	bt         int    // for kLoop: where its block type starts
	cost       int64  // for kBulkTable: fuel per element
	bulk       int    // for kBulkMem: which operation
}

func (m *module) rewriteCode(body []byte) ([]byte, error) {
	r := &reader{wasmbin.Reader{B: body}}
	n := r.U32()
	if r.Err == nil && int(n) != len(m.funcTypes) {
		return nil, errorf("code section has %d bodies for %d functions", n, len(m.funcTypes))
	}
	out := wasmbin.AppendU32(make([]byte, 0, len(body)+len(body)/4), n)
	for i := 0; i < int(n) && r.Err == nil; i++ {
		fb := r.Bytes(int(r.U32()))
		if r.Err != nil {
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
		out = wasmbin.AppendU32(out, uint32(len(nb)))
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
	r := &reader{wasmbin.Reader{B: b}}
	groups := r.U32()
	groupsEnd := r.Off
	locals := uint64(params)
	for g := uint32(0); g < groups && r.Err == nil; g++ {
		locals += uint64(r.U32())
		r.Byte()
	}
	localsEnd := r.Off
	if r.Err != nil {
		return nil, r.Err
	}
	if locals >= 1<<31 {
		return nil, errorf("too many locals")
	}
	fb := fnBody{m: m, locals: uint32(locals)}

	// Pass 1: decode every instruction, and add up each segment's cost
	// (segments.go).
	var code []instr
	sg := newSegments()
	type frame struct {
		loop int // index in code of the loop, or -1
		kind int // kBlock, kLoop or kIf (the function's own: kBlock)
		seg  int // the segment its opening instruction is in
	}
	frames := []frame{{-1, kBlock, 0}}
	calls := false // a leaf (no calls) adds its frame without a check
	bulk := false  // bulk memory operations need three more locals
	loops := 0     // loops, bulk memory operations each counting as one
	frameCount := 0
	for len(frames) > 0 {
		if r.Done() {
			return nil, errorf("body ends before its last end")
		}
		fb.depth = len(frames)
		in, err := fb.decode(r)
		if err != nil {
			return nil, err
		}
		sg.count()
		in.seg = -1
		switch in.kind {
		case kLoop, kBlock, kIf:
			if frameCount++; frameCount > MaxFramesPerFunction {
				return nil, limitf("more than %d blocks, loops and ifs", MaxFramesPerFunction)
			}
		}
		switch in.kind {
		case kLoop:
			if loops++; loops >= MaxLoopsPerFunction {
				return nil, limitf("more than %d loops", MaxLoopsPerFunction)
			}
			in.outOfLine = m.noParams(b, in.bt)
			frames = append(frames, frame{len(code), kLoop, sg.cur})
			in.seg = sg.open(sg.cur, false)
		case kBlock:
			frames = append(frames, frame{-1, kBlock, sg.cur})
		case kIf:
			frames = append(frames, frame{-1, kIf, sg.cur})
			in.seg = sg.open(sg.cur, true)
		case kElse:
			in.seg = sg.open(frames[len(frames)-1].seg, true)
		case kEnd:
			f := frames[len(frames)-1]
			if f.loop >= 0 {
				in.outOfLine = code[f.loop].outOfLine
			}
			frames = frames[:len(frames)-1]
			switch {
			case len(frames) == 0: // the body's last end
			case f.kind == kBlock: // a branch target: its own segment
				in.seg = sg.open(f.seg, true)
			default: // after a loop or an if: the rest of the segment it is in
				sg.cur = f.seg
			}
		case kCall, kCallIndirect:
			calls = true
		case kBulkMem:
			// The chunk loop adds a loop and two frames (bulk.go).
			bulk = true
			loops, frameCount = loops+1, frameCount+2
			if loops >= MaxLoopsPerFunction || frameCount > MaxFramesPerFunction {
				return nil, limitf("more than %d blocks, loops and ifs, or %d loops, bulk memory operations counting as one loop and two blocks each", MaxFramesPerFunction, MaxLoopsPerFunction)
			}
		}
		code = append(code, in)
	}
	segs := sg.costs()
	if !r.Done() {
		return nil, errorf("code after the body's last end")
	}

	// Pass 2: emit. Two i32 locals are added: tmp for bulk lengths, my for
	// the stack counter with this function's frame; and three for the
	// operands of bulk memory operations when there are any.
	out := make([]byte, 0, len(b)+len(b)/3+64)
	tmp, my := fb.locals, fb.locals+1
	ops := bulkLocals{fb.locals + 2, fb.locals + 3, fb.locals + 4}
	out = wasmbin.AppendU32(out, groups+1)
	out = append(out, b[groupsEnd:localsEnd]...)
	if bulk {
		out = append(out, 5, 0x7f)
	} else {
		out = append(out, 2, 0x7f)
	}
	frameBytes := int64(frameBase) + slotBytes*(int64(fb.locals)+int64(results))
	if calls {
		out = m.enterFrame(out, my, frameBytes)
	}
	out = m.charge(out, segs[0])
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
				out = m.chargeOrLeave(out, segs[in.seg])
				sums = append(sums, top+3)
			} else {
				out = append(out, b[in.start:in.end]...)
				out = m.charge(out, segs[in.seg])
				sums = append(sums, top)
			}
		case kBlock:
			out = append(out, b[in.start:in.end]...)
			sums = append(sums, top)
		case kIf:
			out = append(out, b[in.start:in.end]...)
			out = m.take(out, segs[in.seg])
			sums = append(sums, top)
		case kElse:
			out = append(out, b[in.start:in.end]...)
			out = m.take(out, segs[in.seg])
		case kEnd:
			out = append(out, b[in.start:in.end]...)
			if in.outOfLine {
				// br $exit; end $slow; refill; br $retry; end $retry;
				// unreachable (the loop $retry never falls through, and
				// $exit may have results); end $exit
				out = append(out, 0x0c, 0x02, 0x0b)
				out = wasmbin.AppendU32(append(out, 0x10), m.refillIndex)
				out = append(out, 0x0c, 0x00, 0x0b, 0x00, 0x0b)
			}
			if in.seg >= 0 {
				out = m.take(out, segs[in.seg])
			}
			sums = sums[:len(sums)-1]
		case kBranch:
			out = append(out, b[in.start])
			out = wasmbin.AppendU32(out, relabel(in.idx))
		case kBrTable:
			r := &reader{wasmbin.Reader{B: b[:in.end], Off: in.start + 1}}
			n := r.U32()
			out = wasmbin.AppendU32(append(out, 0x0e), n)
			for i := uint32(0); i <= n; i++ {
				out = wasmbin.AppendU32(out, relabel(r.U32()))
			}
		case kCall:
			out = wasmbin.AppendU32(append(out, 0x10), m.fn(in.idx))
			out = m.restoreFrame(out, my)
		case kCallIndirect:
			out = append(out, b[in.start:in.end]...)
			out = m.restoreFrame(out, my)
		case kRefFunc:
			out = wasmbin.AppendU32(append(out, 0xd2), m.fn(in.idx))
		case kBulkMem:
			out = m.chargeTop(out, tmp, BulkShift, 1)
			out = m.chunked(out, ops, in.bulk, b[in.start:in.end])
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
	r := &reader{wasmbin.Reader{B: b, Off: at}}
	idx := r.Leb()
	return r.Err == nil && idx < uint64(len(m.types)) && m.types[idx][0] == 0
}

// enterFrame adds a function's frame to the stack counter, keeps the sum in
// the local my, and traps when it is over the limit. Callers put their own
// sum back after every call (restoreFrame), so a callee's way out (return,
// a branch, the end) needs no code.
func (m *module) enterFrame(out []byte, my uint32, frameBytes int64) []byte {
	out = wasmbin.AppendU32(append(out, 0x23), m.stackGlobal)              // global.get
	out = wasmbin.AppendS64(append(out, 0x41), frameBytes)                 // i32.const
	out = append(out, 0x6a)                                                // i32.add
	out = wasmbin.AppendU32(append(out, 0x22), my)                         // local.tee
	out = wasmbin.AppendU32(append(out, 0x24), m.stackGlobal)              // global.set
	out = wasmbin.AppendU32(append(out, 0x20), my)                         // local.get
	out = wasmbin.AppendS64(append(out, 0x41), int64(m.opt.MaxStackBytes)) // i32.const
	return append(out, 0x4b, 0x04, 0x40, 0x00, 0x0b)                       // i32.gt_u; if; unreachable; end
}

// restoreFrame puts this function's stack sum back after a call.
func (m *module) restoreFrame(out []byte, my uint32) []byte {
	out = wasmbin.AppendU32(append(out, 0x20), my)             // local.get
	return wasmbin.AppendU32(append(out, 0x24), m.stackGlobal) // global.set
}

// chargeOrLeave subtracts a loop's cost at its header and, when the counter
// is below zero, leaves the loop for the refill laid out after it (the label
// of the $slow block is 1 inside the loop).
func (m *module) chargeOrLeave(out []byte, cost int64) []byte {
	out = wasmbin.AppendU32(append(out, 0x23), m.fuelGlobal) // global.get
	out = wasmbin.AppendS64(append(out, 0x42), cost)         // i64.const
	out = append(out, 0x7d)                                  // i64.sub
	out = wasmbin.AppendU32(append(out, 0x24), m.fuelGlobal) // global.set
	out = wasmbin.AppendU32(append(out, 0x23), m.fuelGlobal) // global.get
	return append(out, 0x42, 0x00, 0x53, 0x0d, 0x01)         // i64.const 0; i64.lt_s; br_if 1
}

// take subtracts a segment's static cost without a look at the counter
// (none when it is 0): a segment inside a loop's or a function's body runs
// only after the look at its header or entry, and before the next one, so
// the counter is below zero by at most one body's straight-line code until
// then (and the host counts what a call ends below zero as burnt: call.go,
// settle).
func (m *module) take(out []byte, cost int64) []byte {
	if cost == 0 {
		return out
	}
	out = wasmbin.AppendU32(append(out, 0x23), m.fuelGlobal)  // global.get
	out = wasmbin.AppendS64(append(out, 0x42), cost)          // i64.const
	out = append(out, 0x7d)                                   // i64.sub
	return wasmbin.AppendU32(append(out, 0x24), m.fuelGlobal) // global.set
}

// charge subtracts a static cost, then refills when the counter is negative.
func (m *module) charge(out []byte, cost int64) []byte {
	out = wasmbin.AppendU32(append(out, 0x23), m.fuelGlobal) // global.get
	out = wasmbin.AppendS64(append(out, 0x42), cost)         // i64.const
	out = append(out, 0x7d)                                  // i64.sub
	out = wasmbin.AppendU32(append(out, 0x24), m.fuelGlobal) // global.set
	return m.check(out)
}

// chargeTop charges the i32 on top of the stack (kept there), shifted right
// by shift and multiplied by mul.
func (m *module) chargeTop(out []byte, tmp uint32, shift, mul int64) []byte {
	out = wasmbin.AppendU32(append(out, 0x22), tmp)          // local.tee
	out = wasmbin.AppendU32(append(out, 0x23), m.fuelGlobal) // global.get
	out = wasmbin.AppendU32(append(out, 0x20), tmp)          // local.get
	out = append(out, 0xad)                                  // i64.extend_i32_u
	if shift > 0 {
		out = wasmbin.AppendS64(append(out, 0x42), shift)
		out = append(out, 0x88) // i64.shr_u
	}
	if mul > 1 {
		out = wasmbin.AppendS64(append(out, 0x42), mul)
		out = append(out, 0x7e) // i64.mul
	}
	out = append(out, 0x7d)                                  // i64.sub
	out = wasmbin.AppendU32(append(out, 0x24), m.fuelGlobal) // global.set
	return m.check(out)
}

// check calls the refill import when the counter is below zero.
func (m *module) check(out []byte) []byte {
	out = wasmbin.AppendU32(append(out, 0x23), m.fuelGlobal)  // global.get
	out = append(out, 0x42, 0x00, 0x53, 0x04, 0x40)           // i64.const 0; i64.lt_s; if
	out = wasmbin.AppendU32(append(out, 0x10), m.refillIndex) // call refill
	return append(out, 0x0b)                                  // end
}
