package host

import "github.com/kindgi/packd/internal/sandbox"

// The sandbox's types that a service configures and observes through
// host: the layer above reaches the sandbox only through this one
// (TestLayers). They are the sandbox's own, by alias.
type (
	// SandboxConfig is Config.Sandbox: the runtime, its limits and pool.
	// Its PoolEvents, DroppedLines and CacheRepaired are set from
	// Config.Observe.
	SandboxConfig = sandbox.Config
	// PoolEvent is what happened to a pooled instance
	// (Observer.PoolEvent).
	PoolEvent = sandbox.PoolEvent
	// MemoryAccount is what one tenant's calls hold of the memory budget
	// (Grant.Memory).
	MemoryAccount = sandbox.MemoryAccount
)

// PoolReset is the pool event of an instance reset after a call.
const PoolReset = sandbox.PoolReset

// PoolEventLabels lists every kind of pool event with each reason it can
// carry (sandbox.PoolEventLabels).
func PoolEventLabels() []sandbox.PoolEventLabel { return sandbox.PoolEventLabels() }
