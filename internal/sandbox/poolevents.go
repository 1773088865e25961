package sandbox

// PoolEvent is what happened to a pooled instance (Config.PoolEvents):
// its Kind, its Reason (PoolEventLabels lists which reasons each kind
// carries), and for a reset how long it took (Seconds) and how many pages
// of 4 KiB it copied back (Pages).
type PoolEvent struct {
	Kind    PoolEventKind
	Reason  PoolReason
	Seconds float64
	Pages   int
}

// PoolEventKind is what happened to a pooled instance.
type PoolEventKind string

// The kinds of pool event.
const (
	PoolHit     PoolEventKind = "hit"     // a call got an idle instance
	PoolMiss    PoolEventKind = "miss"    // a call made one
	PoolReset   PoolEventKind = "reset"   // an instance was reset after a call (Reason: how it found the written pages)
	PoolDiscard PoolEventKind = "discard" // an instance was closed (Reason: why)
)

// PoolReason says how a reset found the pages a call wrote, or why an
// instance was discarded.
type PoolReason string

// How a reset found the pages a call wrote.
const (
	ResetKnown   PoolReason = "known"   // those the instance's last scan found, the process having taken no page fault since
	ResetScan    PoolReason = "scan"    // the PAGEMAP_SCAN ioctl
	ResetPagemap PoolReason = "pagemap" // reading /proc/self/pagemap
	ResetCompare PoolReason = "compare" // every page compared with the snapshot
)

// Why an instance was discarded.
const (
	DiscardError  PoolReason = "error"  // its call did not end well
	DiscardGrown  PoolReason = "grown"  // its memory grew and could not be set back to the snapshot's size
	DiscardFull   PoolReason = "full"   // the pool had no room for it
	DiscardIdle   PoolReason = "idle"   // it waited too long
	DiscardOld    PoolReason = "old"    // its snapshot was taken anew
	DiscardMemory PoolReason = "memory" // a call needed its memory
)

// PoolEventLabel is one kind of pool event with one reason it carries (""
// for none).
type PoolEventLabel struct {
	Kind   PoolEventKind
	Reason PoolReason
}

// PoolEventLabels lists every kind of pool event with each reason it can
// carry, in a fixed order: the one list that the metric's labels and
// docs/operations.md are held to.
func PoolEventLabels() []PoolEventLabel {
	return []PoolEventLabel{
		{PoolHit, ""}, {PoolMiss, ""},
		{PoolReset, ResetKnown}, {PoolReset, ResetScan}, {PoolReset, ResetPagemap}, {PoolReset, ResetCompare},
		{PoolDiscard, DiscardError}, {PoolDiscard, DiscardGrown}, {PoolDiscard, DiscardFull},
		{PoolDiscard, DiscardIdle}, {PoolDiscard, DiscardOld}, {PoolDiscard, DiscardMemory},
	}
}
