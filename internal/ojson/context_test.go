package ojson

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// lateTimer is a context whose deadline has passed but whose timer has not
// fired (or that arms none): Err is nil, Done is open.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

// TestDecodingStopsWhenItsContextEnds: a document of many values is not
// decoded to its end once the caller has gone or the deadline has passed
// by the clock, its context's timer late or not armed (packd decodes what
// a guest answered under the call's deadline: a large answer was decoded
// whole past it).
func TestDecodingStopsWhenItsContextEnds(t *testing.T) {
	doc := []byte("[" + strings.Repeat("0,", 4*checkEvery) + "0]")
	if v, err := DecodeContext(context.Background(), doc); err != nil || len(v.([]any)) != 4*checkEvery+1 {
		t.Fatalf("%v", err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{
		{cancelled, context.Canceled},
		{lateTimer{context.Background(), time.Now().Add(-time.Millisecond)}, context.DeadlineExceeded},
	} {
		v, err := DecodeContext(c.ctx, doc)
		if !errors.Is(err, c.want) || v != nil {
			t.Errorf("%v: decoded (%t), error %v", c.want, v != nil, err)
		}
		var syntax *SyntaxError
		if errors.As(err, &syntax) {
			t.Errorf("%v: reported as a syntax error: %v", c.want, err)
		}
	}
	// A deadline ahead is no reason to stop.
	ahead := lateTimer{context.Background(), time.Now().Add(time.Hour)}
	if _, err := DecodeContext(ahead, doc); err != nil {
		t.Fatal(err)
	}
}
