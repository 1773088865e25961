package host

// Observer is told what happens beside the calls' answers: one set of
// hooks, given once (Config.Observe), which Load splits into the sandbox's
// config and the egress's, as httptrace.ClientTrace gathers a client's. A
// nil field is told nothing. Every hook is called on the goroutine of what
// it observes and must not block.
type Observer struct {
	// PoolEvent is told what happened to a pooled instance.
	PoolEvent func(PoolEvent)
	// DroppedLine is told of a line of pack code output dropped because
	// its reader fell behind, by stream ("stdout", "stderr").
	DroppedLine func(stream string)
	// CacheRepaired is told that the compilation cache held a corrupt
	// entry (why, and how many entries were removed).
	CacheRepaired func(why string, removed int)
	// GuestOutput, when set, receives every line a call's pack code
	// writes, with who wrote it, instead of Sandbox.Stdout and
	// Sandbox.Stderr.
	GuestOutput func(GuestLine)
	// EgressRequest is told of every outbound request of pack code.
	EgressRequest func(EgressEvent)
	// Tracer opens a span for each outbound request.
	Tracer EgressTracer
}
