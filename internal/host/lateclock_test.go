package host_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host"
)

// lateTimer is a context whose deadline has passed but whose timer has not
// fired yet, as under load when every core is busy in guest code: Err is
// nil and Done is open.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

// TestNoResultAfterTheDeadline: a call whose deadline has passed by the
// clock answers deadline-exceeded, never a result, even while its
// context's timer has not fired (on main: the result went out).
func TestNoResultAfterTheDeadline(t *testing.T) {
	conf := loadIndex(t, filepath.Join("..", "..", "wasm-examples", "conformance", "index.json"), false)
	ctx := lateTimer{Context: context.Background(), deadline: time.Now().Add(-time.Millisecond)}
	o := conf.Dispatch(ctx, host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"hi"},"ctx":{"tenantId":"t","runId":"r"}}`)})
	if o.Code != abi.CodeDeadlineExceeded {
		t.Fatalf("%s", o.Response)
	}
	o = conf.Dispatch(ctx, host.Request{Body: []byte(`{"v":2,"kind":"check-invoke","check":{"id":"conformance.checks.min-length"},"config":{},"trace":{"output":"long enough"}}`)})
	if o.Code != abi.CodeDeadlineExceeded {
		t.Fatalf("%s", o.Response)
	}
}
