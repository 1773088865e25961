package sandbox

import (
	"runtime"
	"syscall"
)

// Page work is the kernel's work on instance memory for one call that
// neither fuel nor the Go scheduler can share out: faulting in what a
// grow added (40 ms for 192 MiB here). A grow of bigPageWork bytes or more
// is faulted in on a thread of its own at the lowest CPU priority (nice
// 19) while the call waits for it, so that on a busy machine it takes the
// core time the other calls leave, instead of the time they need: beside
// a flood of 192 MiB hogs, tenant B's p99 went from a median of 2.1x of
// alone to 1.6x (make fairload; 1.2x with huge pages, memory_linux.go
// populate). Alone on a core a thread runs as fast at
// nice 19 as at 0, and the call waits for its own work either way. A
// smaller grow is faulted in where it is: the hand-off costs more than a
// few hundred pages.
//
// Only system calls run on a page-work thread: Go code there would hold a
// P (one of GOMAXPROCS) while the niced thread waited for a core. Nor does
// work run there that a call's slot waits for once the call has ended,
// such as unmapping a discarded instance's memory: beside busy guests a
// nice-19 thread waits tens of milliseconds for a core, and the slot
// with it (unmapping there did no better for B in make fairload either).
const bigPageWork = 4 << 20

// pageWorkNice is the niceness of page-work threads. A thread may raise
// its niceness, but not lower it again without CAP_SYS_NICE, so a niced
// thread never goes back to running Go's other goroutines: its goroutine
// ends locked to it, and Go ends the thread with it.
const pageWorkNice = 19

// idlePageWorkers are the page-work threads waiting for a job, each by
// its job channel; a worker that finds it full ends.
var idlePageWorkers = make(chan chan func(), 2*runtime.GOMAXPROCS(0))

// runPageWork runs f, page work on n bytes, and returns when f has: on a
// page-work thread when n is bigPageWork or more, here otherwise.
func runPageWork(n int, f func()) {
	if n < bigPageWork {
		f()
		return
	}
	var jobs chan func()
	select {
	case jobs = <-idlePageWorkers:
	default:
		jobs = make(chan func())
		go pageWorker(jobs)
	}
	done := make(chan struct{})
	jobs <- func() { f(); close(done) }
	<-done
}

// pageWorker runs jobs on a niced thread of its own, one at a time, and
// waits among the idle workers between them.
func pageWorker(jobs chan func()) {
	runtime.LockOSThread() // for good: see pageWorkNice
	// When the thread cannot be niced (a seccomp filter, say), the work
	// runs at the priority it had.
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), pageWorkNice)
	for {
		(<-jobs)()
		select {
		case idlePageWorkers <- jobs:
		default:
			return
		}
	}
}
