package sandbox

import (
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// threadNice is the niceness of the calling thread.
func threadNice(t *testing.T) int {
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	return 20 - prio // the system call's value is 20 - nice
}

// Big page work runs at nice 19, small work where it is, and the niced
// threads never run anything else: every goroutine that runs after
// (pinned to whatever thread it got) has the process's niceness.
func TestBigPageWorkRunsNicedAndKeepsToItself(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own := threadNice(t)
	if own >= pageWorkNice {
		t.Fatalf("the test runs at nice %d: page work cannot be told apart", own)
	}
	var wg sync.WaitGroup
	for round := 0; round < 4; round++ {
		for i := 0; i < 8; i++ { // several at once: more workers than stay idle
			wg.Add(1)
			go func() {
				defer wg.Done()
				var nice int
				runPageWork(bigPageWork, func() { nice = threadNice(t) })
				if nice != pageWorkNice {
					t.Errorf("big page work ran at nice %d, want %d", nice, pageWorkNice)
				}
			}()
		}
		wg.Wait()
		var nice int
		runPageWork(bigPageWork-1, func() { nice = threadNice(t) })
		if nice != own {
			t.Errorf("small page work ran at nice %d, want this thread's %d", nice, own)
		}
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if nice := threadNice(t); nice != own {
					t.Errorf("a goroutine ran on a thread at nice %d, want %d", nice, own)
				}
			}()
		}
		wg.Wait()
	}
}
