package sandbox

import "time"

// TrimPools closes a module's idle instances put back before cutoff, as
// its janitor does after poolIdleFor.
func TrimPools(m *Module, cutoff time.Time) {
	if m.pool != nil {
		m.pool.trim(cutoff)
	}
}
