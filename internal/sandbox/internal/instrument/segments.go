package instrument

// Segments: the straight-line pieces of a function body that the pass
// charges for, each once as control enters it.
//
// A segment starts at the function's entry, at a loop's header (both
// charged with a look at the counter), at an if's then and else arms, and
// after a block's end (a branch target), and is charged there (take, no
// look). The code after a loop's or an if's end goes on the segment the
// loop or if is in: every way to it (falling through, or a branch to the
// if's label) enters the loop or if first, from that segment, once per
// time the segment is entered, so charging it there charges it once for
// each time it can run. The code inside a block goes on the segment the
// block is in, as the block's entry is not a branch target. So each
// segment runs at most once per charge, forward from its start (which
// holds the instructions of the call, when it does, as fuel used is an
// upper bound of the instructions run), and a charge is paid for only
// where control can come in other than from the instruction before:
// a Go guest, whose functions are one loop around a br_table into one
// block end per case, pays for the case it runs, not for every case.
//
// An arm or a block's rest of at most mergeBelow instructions is charged
// on the segment it is opened from instead, once per time that one runs:
// a charge costs four instructions, and a small arm is cheaper prepaid.

// mergeBelow is the cost at or under which a segment is charged on the
// segment it opens from (not a loop's header: its look at the counter is
// what bounds a loop).
const mergeBelow = 8

type segments struct {
	cost   []int64
	parent []int // the segment it was opened from (-1: the entry, a loop's header)
	cur    int   // the segment the instructions being read go on
}

func newSegments() *segments { return &segments{cost: []int64{0}, parent: []int{-1}} }

// count adds an instruction to the current segment.
func (s *segments) count() { s.cost[s.cur]++ }

// open starts a segment opened from the segment from, current from now;
// mergeable says it may be charged on from when small.
func (s *segments) open(from int, mergeable bool) int {
	parent := -1
	if mergeable {
		parent = from
	}
	s.cost, s.parent = append(s.cost, 0), append(s.parent, parent)
	s.cur = len(s.cost) - 1
	return s.cur
}

// costs is what each segment's charge subtracts: its own cost, or 0 once
// merged into the one it opens from (later segments first: a segment's
// parent always comes before it, so what merges into a segment is in its
// cost before it is itself looked at).
func (s *segments) costs() []int64 {
	for i := len(s.cost) - 1; i > 0; i-- {
		if p := s.parent[i]; p >= 0 && s.cost[i] <= mergeBelow {
			s.cost[p] += s.cost[i]
			s.cost[i] = 0
		}
	}
	return s.cost
}
