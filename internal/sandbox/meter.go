package sandbox

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
)

// What host work costs the guest that asks for it, in fuel, charged before
// the work is done (RATIONALE.md, "Why do host functions charge fuel?").
const (
	hostCallCost  = 64       // every host call, whatever it does
	copyShift     = 3        // copying guest memory: a unit per 8 bytes
	randomCost    = 8        // random bytes: eight units per byte (crypto/rand)
	scanCost      = 1        // output lines (scanned for newlines): a unit per byte
	jsonScanCost  = 16       // json_scan: units per byte read (its slowest bytes take about 2-5 ns)
	hostChunk     = 64 << 10 // bytes of work between two looks at the context
	iovecBytes    = 8
	maxIovecs     = 1 << 20
	pollSubBytes  = 48
	pollEventSize = 32
)

// lookUnits is the fuel host work may charge between two reads of the
// clock (about 4 µs of json_scan): a guest's refill (a charge of 0) reads
// it at every slice, a host call that charges more at every call, and one
// that waits (poll_oneoff) before it waits, but the few cheap calls of
// most guest calls (request_len, a small json_members) read it none:
// reading it was 8% of a pooled Go echo.
const lookUnits = 1 << 16

// charge takes units of fuel from the guest's counter for host work it
// asked for, refilling from the call's budget like the refill import: it
// stops the guest (panics) when the call's context is done or the budget
// is spent, before any of the work is done.
func charge(ctx context.Context, mod api.Module, units int64) {
	if ctx.Err() != nil {
		stopForContext()
	}
	st := stateFrom(ctx)
	if st.unlooked += units; units == 0 || st.unlooked >= lookUnits {
		look(st)
	}
	g := st.fuel
	if g == nil || st.fuelOf != mod {
		var ok bool
		if g, ok = mod.ExportedGlobal(instrument.GlobalExport).(api.MutableGlobal); !ok {
			panic(&ABIError{Func: instrument.ImportRefill, Reason: "called by a module without its fuel counter"})
		}
		st.fuel, st.fuelOf = g, mod
	}
	cur := int64(g.Get()) - units
	for cur < 0 {
		if st.fuelLeft <= 0 {
			g.Set(0)
			panic(ErrOutOfFuel)
		}
		n := min(st.fuelSlice, st.fuelLeft)
		st.fuelLeft -= n
		cur += n
		if st.meter != nil {
			st.meter.Add(n)
		}
	}
	g.Set(uint64(cur))
}

// look stops the guest when the call's deadline has passed by the clock
// (the context's timer may be late), and may yield (tick).
func look(st *callState) {
	st.unlooked = 0
	if st.tick() {
		stopForDeadline()
	}
}

// charged wraps a host function so that every call costs hostCallCost
// first.
func charged(f api.GoModuleFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		charge(ctx, mod, hostCallCost)
		f(ctx, mod, stack)
	}
}

// fuelRefill is called by instrumented code when its fuel counter is below
// zero. It stops the guest when the call's context is done (deadline,
// cancellation) or the budget is spent, and otherwise hands it more fuel,
// one slice at a time, so the guest returns to Go at least once a slice.
func fuelRefill(ctx context.Context, mod api.Module, _ []uint64) { charge(ctx, mod, 0) }

// writeLines forwards guest memory [ptr, ptr+n) to a line writer in chunks,
// each paid for before it is scanned; once the call's output budget is
// spent, the rest is dropped unread. It reports false when the range is
// outside guest memory.
func writeLines(ctx context.Context, mod api.Module, w *lineWriter, ptr, n uint32) bool {
	if _, ok := mod.Memory().Read(ptr, n); !ok {
		return false
	}
	for off := uint32(0); off < n && !w.exceeded; {
		c := min(n-off, hostChunk)
		charge(ctx, mod, int64(c)*scanCost)
		b, _ := mod.Memory().Read(ptr+off, c)
		w.Write(b)
		off += c
	}
	return true
}

// stopForContext stops the guest because its call's context is done: with
// stopForDeadline, the one way host code does so (the fuel refill, charged
// host work, a sleep in poll_oneoff). classify then reads the context to
// tell a deadline from a cancellation.
func stopForContext() { panic(ErrCancelled) }

// stopForDeadline stops the guest because its call's deadline has passed
// by the clock, before the context's timer has said so.
func stopForDeadline() { panic(ErrDeadline) }
