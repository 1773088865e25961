package instrument

import (
	"sort"

	"github.com/kindgi/packd/internal/wasmbin"
)

// Data segments: a module's active segments are merged where they are
// close, so that an instance costs the host one record per run of data,
// not one per segment. Go's linker splits a pack's data at every run of
// zeros, about 39,000 segments for the echo pack, and wazero keeps a slice
// header per segment in every instance (900 KiB of Go heap each, scanned
// by every collection) and evaluates each offset at every instantiation.
//
// Merging is exact: segments are merged only when every one is active on
// memory 0 at a constant i32 offset, none overlaps another, and the module
// has no data count section (without which it cannot use memory.init or
// data.drop, the only instructions that name a segment). A gap between
// merged segments is written as the zeros it held, since a fresh memory is
// zero and no segment covers it; which segment fails on a memory too small
// changes nothing a guest can see, since only the module's own memory is
// written and instantiation fails either way.
const (
	// mergeGap is the widest gap merged: the zeros it adds cost less than
	// another segment's record in every instance.
	mergeGap = 64
)

type dataSegment struct {
	offset uint32
	init   []byte
}

// mergeData returns the data section with close segments merged, or body
// as it is when merging is not exact or saves nothing. The zeros added are
// at most the section's own size, so the module grows by at most twice its
// data whatever its layout.
func (m *module) mergeData(body []byte) []byte {
	for _, s := range m.sections {
		if s.id == secDataCount {
			return body
		}
	}
	segs, ok := activeSegments(body)
	if !ok || len(segs) < 2 {
		return body
	}
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].offset < segs[j].offset })
	for i := 1; i < len(segs); i++ {
		if uint64(segs[i].offset) < uint64(segs[i-1].offset)+uint64(len(segs[i-1].init)) {
			return body // overlapping: the order they are written in matters
		}
	}
	budget := len(body)
	var runs []dataSegment
	for _, s := range segs {
		if n := len(runs); n > 0 {
			last := &runs[n-1]
			end := uint64(last.offset) + uint64(len(last.init))
			if gap := uint64(s.offset) - end; gap <= mergeGap && int(gap) <= budget {
				budget -= int(gap)
				last.init = append(last.init, make([]byte, gap)...)
				last.init = append(last.init, s.init...)
				continue
			}
		}
		runs = append(runs, dataSegment{offset: s.offset, init: append([]byte(nil), s.init...)})
	}
	if len(runs) == len(segs) {
		return body
	}
	out := wasmbin.AppendU32(nil, uint32(len(runs)))
	for _, s := range runs {
		out = append(out, 0, 0x41)
		out = wasmbin.AppendS64(out, int64(int32(s.offset)))
		out = append(out, 0x0b)
		out = wasmbin.AppendU32(out, uint32(len(s.init)))
		out = append(out, s.init...)
	}
	return out
}

// ConstI32 is the value of a constant expression that is one i32.const
// (0x41, a signed LEB128, end), as an active data segment's offset is;
// false for any other.
func ConstI32(expr []byte) (uint32, bool) {
	r := &reader{wasmbin.Reader{B: expr}}
	if r.Byte() != 0x41 {
		return 0, false
	}
	v, ok := r.S32()
	if !ok || r.Byte() != 0x0b || r.Err != nil || !r.Done() {
		return 0, false
	}
	return uint32(v), true
}

// activeSegments reads a data section (already checked by checkData) whose
// segments are all active on memory 0 at an i32.const offset; ok is false
// for any other.
func activeSegments(body []byte) (segs []dataSegment, ok bool) {
	r := &reader{wasmbin.Reader{B: body}}
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		switch flags := r.U32(); flags {
		case 0:
		case 2:
			if r.U32() != 0 {
				return nil, false
			}
		default:
			return nil, false
		}
		if r.Byte() != 0x41 {
			return nil, false
		}
		offset, ok := r.S32()
		if !ok || r.Byte() != 0x0b {
			return nil, false
		}
		init := r.Bytes(int(r.U32()))
		segs = append(segs, dataSegment{offset: uint32(offset), init: init})
	}
	if r.Err != nil || !r.Done() {
		return nil, false
	}
	return segs, true
}
