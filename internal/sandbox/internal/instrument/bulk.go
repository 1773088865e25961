package instrument

import "github.com/kindgi/packd/internal/wasmbin"

// Bulk memory operations run in chunks of BulkChunk bytes, each followed by
// a call to the refill import: one memory.fill over a gigabyte of fresh
// pages takes seconds (every 4 KiB page is a fault), and a deadline can
// only stop a guest when it calls the host. The whole length is charged
// before the first chunk (chargeTop), so the counter is not below zero
// after it and the refill only looks at the call's deadline and context.
// An operation of at most BulkChunk bytes runs as written.
//
// Chunks go in the order that keeps the operation's meaning: memory.copy
// to a lower address copies from the front, to a higher one from the back,
// so an overlapping source is read before it is overwritten. An operation
// out of bounds traps in the chunk that reaches past the end, after the
// chunks before it were written; a trap ends the call and its instance is
// discarded, so no one sees them.

// BulkChunk is the bytes a bulk memory operation moves between two looks at
// the call's deadline.
const BulkChunk = 256 << 10

// chunkBytes is BulkChunk, lowered by the package's tests to cross chunks
// with short data segments.
var chunkBytes int64 = BulkChunk

// Bulk memory operations, as decode tells them apart.
const (
	bulkFill = iota + 1 // memory.fill d v n
	bulkCopy            // memory.copy d s n
	bulkInit            // memory.init d s n
)

// bulkLocals are the i32 locals the chunk loop keeps its operands in: the
// destination, the source (memory.fill: the value) and the length.
type bulkLocals struct{ d, s, n uint32 }

// chunked emits the operation op (its bytes as written, immediates
// included) on the three operands on the stack, in chunks.
func (m *module) chunked(out []byte, l bulkLocals, kind int, op []byte) []byte {
	out = wasmbin.AppendU32(append(out, 0x21), l.n)        // local.set n
	out = wasmbin.AppendU32(append(out, 0x21), l.s)        // local.set s
	out = wasmbin.AppendU32(append(out, 0x21), l.d)        // local.set d
	out = append(out, 0x02, 0x40, 0x03, 0x40)              // block; loop
	out = wasmbin.AppendU32(append(out, 0x20), l.n)        // local.get n
	out = wasmbin.AppendS64(append(out, 0x41), chunkBytes) // i32.const C
	out = append(out, 0x4d, 0x0d, 0x01)                    // i32.le_u; br_if 1 (out of the block)
	front := func(out []byte) []byte {
		out = op3(out, l.d, l.s, op)
		out = addConst(out, l.d, chunkBytes)
		if kind != bulkFill {
			out = addConst(out, l.s, chunkBytes)
		}
		return out
	}
	if kind == bulkCopy {
		out = wasmbin.AppendU32(append(out, 0x20), l.d) // local.get d
		out = wasmbin.AppendU32(append(out, 0x20), l.s) // local.get s
		out = append(out, 0x4d, 0x04, 0x40)             // i32.le_u; if
		out = front(out)                                // d <= s: from the front
		out = append(out, 0x05)                         // else: from the back
		out = tail(out, l.d, l.n)                       // d + n - C
		out = tail(out, l.s, l.n)                       // s + n - C
		out = wasmbin.AppendS64(append(out, 0x41), chunkBytes)
		out = append(out, op...)
		out = append(out, 0x0b) // end
	} else {
		out = front(out)
	}
	out = addConst(out, l.n, -chunkBytes)
	out = wasmbin.AppendU32(append(out, 0x10), m.refillIndex) // call refill: the deadline
	out = append(out, 0x0c, 0x00, 0x0b, 0x0b)                 // br 0 (the loop); end; end
	// What is left, at most one chunk.
	out = wasmbin.AppendU32(append(out, 0x20), l.d)
	out = wasmbin.AppendU32(append(out, 0x20), l.s)
	out = wasmbin.AppendU32(append(out, 0x20), l.n)
	return append(out, op...)
}

// op3 emits op on d, s and one chunk's length.
func op3(out []byte, d, s uint32, op []byte) []byte {
	out = wasmbin.AppendU32(append(out, 0x20), d)
	out = wasmbin.AppendU32(append(out, 0x20), s)
	out = wasmbin.AppendS64(append(out, 0x41), chunkBytes)
	return append(out, op...)
}

// addConst adds c to the i32 local l.
func addConst(out []byte, l uint32, c int64) []byte {
	out = wasmbin.AppendU32(append(out, 0x20), l)               // local.get
	out = append(wasmbin.AppendS64(append(out, 0x41), c), 0x6a) // i32.const c; i32.add
	return wasmbin.AppendU32(append(out, 0x21), l)              // local.set
}

// tail pushes a + n - chunkBytes: where the last chunk of a run starts.
func tail(out []byte, a, n uint32) []byte {
	out = wasmbin.AppendU32(append(out, 0x20), a)
	out = wasmbin.AppendU32(append(out, 0x20), n)
	out = append(out, 0x6a)                                               // i32.add
	return append(wasmbin.AppendS64(append(out, 0x41), chunkBytes), 0x6b) // i32.const C; i32.sub
}
