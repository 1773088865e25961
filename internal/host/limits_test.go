package host

import (
	"testing"
	"time"
)

// TestCallTimeout: a call's time limit is what its caller named, the
// default when it named none, and never more than MaxTimeout.
func TestCallTimeout(t *testing.T) {
	for named, want := range map[time.Duration]time.Duration{
		0: DefaultTimeout, -time.Second: DefaultTimeout, time.Millisecond: time.Millisecond,
		MaxTimeout: MaxTimeout, MaxTimeout + 1: MaxTimeout, 1<<63 - 1: MaxTimeout,
	} {
		if got := callTimeout(named); got != want {
			t.Errorf("callTimeout(%v) = %v, want %v", named, got, want)
		}
	}
}
