package sandbox

import "fmt"

// A tape holds what the host answered one call's guest, in order: the
// readings of the clocks, the random bytes, the wake-ups of poll_oneoff,
// the answers to outbound requests.
// Request.Record fills one as the call runs; Request.Replay serves one
// instead of the live answers, so that the same module, snapshot and
// request give the same output and the same fuel, instruction for
// instruction (the guest computes nothing else from outside itself).

// Tape is one call's host answers.
type Tape struct {
	Answers []TapeAnswer
	// Max bounds the bytes of answers a recording keeps (0: MaxTapeBytes,
	// which also bounds any larger Max).
	Max int
	// Truncated: recording stopped at the bound; the tape cannot be
	// replayed.
	Truncated bool
	size      int
	next      int // replay: the answer served next
}

// Size is what the tape's answers count against its bound: their bytes
// and details, and answerOverhead each.
func (t *Tape) Size() int {
	if t == nil {
		return 0
	}
	return t.size
}

// TapeAnswer is one host answer: the import that gave it, what the guest
// asked (a clock id, a byte count, the subscriptions of a poll, by
// import), the bytes the host wrote into guest memory, and the fuel the
// call had burnt when it asked.
type TapeAnswer struct {
	Import string `json:"import"`
	Arg    uint64 `json:"arg"`
	// Detail says the call in words where Arg is a hash (an outbound
	// request's method, scheme and host, and a hash of the rest of its
	// URL): at most 310 bytes, counted against the tape's bound.
	Detail string `json:"detail,omitempty"`
	Value  []byte `json:"value"`
	Fuel   int64  `json:"fuel"`
}

// MaxTapeBytes bounds the answers one call's tape keeps.
const MaxTapeBytes = 4 << 20

// answerOverhead is what each answer counts against a tape's bound besides
// its bytes: about its place in memory and in a record file, so that a
// guest's million tiny answers are bounded as its few large ones are.
const answerOverhead = 64

// DivergenceError: a replayed call asked the host for something other
// than the recorded call did at the same point (or for more): the module,
// its snapshot or its request is not the recorded one.
type DivergenceError struct {
	At         int    // the answer's index on the tape
	Want, Got  string // the recorded host call, and this one ("" past the end)
	Fuel       int64  // the fuel this call had burnt when it asked
	RecordFuel int64  // and the recorded call, at the same answer
}

func (e *DivergenceError) Error() string {
	want := e.Want
	if want == "" {
		want = "the end of the tape"
	}
	return fmt.Sprintf("the replay diverged at host call %d: the recording has %s, this call asked for %s (fuel %d here, %d in the recording)",
		e.At, want, e.Got, e.Fuel, e.RecordFuel)
}

func describeCall(imp string, arg uint64, detail string, n int) string {
	if detail != "" {
		return imp + " " + detail
	}
	return fmt.Sprintf("%s(%d) of %d bytes", imp, arg, n)
}

// record appends an answer, unless the tape is full (then truncated).
func (t *Tape) record(imp string, arg uint64, detail string, value []byte, fuel int64) {
	limit := MaxTapeBytes
	if t.Max > 0 {
		limit = min(t.Max, limit)
	}
	n := len(value) + len(detail) + answerOverhead
	if t.Truncated || t.size+n > limit {
		t.Truncated = true
		return
	}
	t.size += n
	t.Answers = append(t.Answers, TapeAnswer{Import: imp, Arg: arg, Detail: detail, Value: append([]byte(nil), value...), Fuel: fuel})
}

// take serves the next answer, which must be of the same import and
// argument as the call asks, and of its size n (-1: any size).
func (t *Tape) take(imp string, arg uint64, detail string, n int, fuel int64) (TapeAnswer, error) {
	got := describeCall(imp, arg, detail, n)
	if t.next >= len(t.Answers) {
		return TapeAnswer{}, &DivergenceError{At: t.next, Got: got, Fuel: fuel}
	}
	a := t.Answers[t.next]
	if a.Import != imp || a.Arg != arg || n >= 0 && len(a.Value) != n {
		if detail != "" && detail == a.Detail {
			got += " with another head or body"
		}
		return TapeAnswer{}, &DivergenceError{At: t.next, Want: describeCall(a.Import, a.Arg, a.Detail, len(a.Value)), Got: got, Fuel: fuel, RecordFuel: a.Fuel}
	}
	t.next++
	return a, nil
}

// Rewind makes the tape serve from its first answer again.
func (t *Tape) Rewind() { t.next = 0 }

// Unserved is how many answers a replay left on the tape: a call that
// asked the host for less than the recording did diverged too.
func (t *Tape) Unserved() int { return len(t.Answers) - t.next }

// taped is how a host import answers the guest from outside it: live
// writes the live answer into b (guest memory, or a buffer the import
// copies from), and taped puts it on the call's tape when it records one,
// or, when the call replays a tape, writes the recorded answer into b
// instead and live never runs. Every answer a guest could compute
// something else from goes through here (clocks, random bytes, poll
// wake-ups; outbound requests, whose answers are not of a size the guest
// names, are taped in httpRequest), so that a recorded call replays
// exactly.
func (st *callState) taped(imp string, arg uint64, b []byte, live func()) {
	if st.replayed(imp, arg, b) {
		return
	}
	live()
	st.recorded(imp, arg, b)
}

// replayed fills b, guest memory, with the recorded answer to a host
// call when the call replays a tape, and says whether it did; a call that
// asks for another answer than the tape holds stops there.
func (st *callState) replayed(imp string, arg uint64, b []byte) bool {
	if st.replay == nil {
		return false
	}
	a, err := st.replay.take(imp, arg, "", len(b), st.fuelUsed())
	if err != nil {
		panic(err)
	}
	copy(b, a.Value)
	return true
}

// recorded puts the live answer the host wrote into b on the call's tape,
// when it records one.
func (st *callState) recorded(imp string, arg uint64, b []byte) {
	if st.record != nil {
		st.record.record(imp, arg, "", b, st.fuelUsed())
	}
}

// GuestLimits are the sandbox settings that change what a guest computes:
// a memory.grow refused, a stack overflow, an answer too long, a table
// too large, an initialisation out of fuel. A replay runs under the
// recorded ones.
type GuestLimits struct {
	MemoryLimitPages uint32 `json:"memoryLimitPages"`
	MaxResponseBytes int    `json:"maxResponseBytes"`
	MaxTableElements uint32 `json:"maxTableElements"`
	MaxStackBytes    uint32 `json:"maxStackBytes"`
	LoadFuel         int64  `json:"loadFuel"`
	DefaultFuel      int64  `json:"defaultFuel"`
}

// GuestLimits are the sandbox's.
func (s *Sandbox) GuestLimits() GuestLimits {
	c := &s.cfg
	return GuestLimits{MemoryLimitPages: c.MemoryLimitPages, MaxResponseBytes: c.MaxResponseBytes,
		MaxTableElements: c.MaxTableElements, MaxStackBytes: c.MaxStackBytes, LoadFuel: c.LoadFuel, DefaultFuel: c.DefaultFuel}
}

// Apply sets them in cfg (a zero field leaves cfg's).
func (g GuestLimits) Apply(cfg *Config) {
	set := func(dst *uint32, v uint32) {
		if v != 0 {
			*dst = v
		}
	}
	set(&cfg.MemoryLimitPages, g.MemoryLimitPages)
	set(&cfg.MaxTableElements, g.MaxTableElements)
	set(&cfg.MaxStackBytes, g.MaxStackBytes)
	if g.MaxResponseBytes != 0 {
		cfg.MaxResponseBytes = g.MaxResponseBytes
	}
	if g.LoadFuel != 0 {
		cfg.LoadFuel = g.LoadFuel
	}
	if g.DefaultFuel != 0 {
		cfg.DefaultFuel = g.DefaultFuel
	}
}

// fuelUsed is the fuel the call has burnt so far.
func (st *callState) fuelUsed() int64 {
	used := st.budget - st.fuelLeft
	if st.fuel != nil {
		used -= int64(st.fuel.Get())
	}
	return used
}
