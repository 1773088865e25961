package sandbox

import "sync/atomic"

// A MemoryAccount is what the calls of one party (a tenant) hold of the
// sandbox's memory budget (Config.MemoryBudget) together: the linear memory
// of each call's instance, from the start of the call to its end.
// Request.Account names a call's; a call without one counts in the budget
// alone. Share bounds an account: memory that would take it past Share()
// bytes is refused as memory past the budget is (a memory.grow returns -1;
// a call whose instance's memory does not fit fails with ErrMemoryShare
// before it runs). A nil Share, or one that answers 0 or less, bounds
// nothing. Share is called on the guest's goroutine, while it grows its
// memory: it must be quick and must not block. Safe for concurrent use.
type MemoryAccount struct {
	Share func() int64
	used  atomic.Int64
}

// Used is the bytes the account's running calls hold.
func (a *MemoryAccount) Used() int64 { return a.used.Load() }

// take adds n bytes to a nil or bounded account, or reports false when
// they would take it past its share.
func (a *MemoryAccount) take(n int64) bool {
	if a == nil || n <= 0 {
		return true
	}
	var share int64
	if a.Share != nil {
		share = a.Share()
	}
	for {
		used := a.used.Load()
		if share > 0 && used+n > share {
			return false
		}
		if a.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (a *MemoryAccount) give(n int64) {
	if a != nil {
		a.used.Add(-n)
	}
}

// attach charges the memory of a call's instance, size bytes when the call
// starts, to account; it reports false, charging nothing, when they would
// take it past its share.
func (c *callMemory) attach(account *MemoryAccount, size int64) bool {
	if !account.take(size) {
		return false
	}
	c.account, c.held = account, size
	return true
}

// detach gives back what the call's account was charged, at the call's end.
func (c *callMemory) detach() {
	c.account.give(c.held)
	c.account, c.held = nil, 0
}

// MemoryBudget is Config.MemoryBudget, in bytes (0: none).
func (s *Sandbox) MemoryBudget() int64 { return s.mem.limit }
