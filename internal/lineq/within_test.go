package lineq

import (
	"context"
	"testing"
	"time"
)

// within is a context done after d, or when the test ends.
func within(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
