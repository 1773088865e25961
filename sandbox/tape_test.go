package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kindgi/packd/sandbox"
)

// TestATapeReplaysACallExactly: a call recorded on a tape (its clock
// readings, random bytes and poll wake-up) replays, pooled or fresh, to
// the same output and the same fuel, where a live call gets other bytes;
// a module that asks the host for something else in another order stops
// at the first host call that differs, and says which.
func TestATapeReplaysACallExactly(t *testing.T) {
	for _, pool := range []int{0, 2} {
		sb := newSandbox(t, sandbox.Config{PoolSize: pool})
		m := compile(t, sb, hostile("clockrand"))
		ctx := context.Background()
		tape := &sandbox.Tape{}
		rec, err := m.Call(ctx, sandbox.Request{Body: []byte("x"), Record: tape})
		if err != nil || len(rec.Body) != 40 {
			t.Fatalf("pool %d: the recorded call: %v %x", pool, err, rec.Body)
		}
		var imports []string
		for _, a := range tape.Answers {
			imports = append(imports, a.Import)
		}
		if got := strings.Join(imports, " "); got != "clock_time_get clock_time_get random_get poll_oneoff clock_time_get" || tape.Truncated {
			t.Fatalf("pool %d: the tape holds %s (truncated %v)", pool, got, tape.Truncated)
		}
		live, err := m.Call(ctx, sandbox.Request{Body: []byte("x")})
		if err != nil || bytes.Equal(live.Body, rec.Body) {
			t.Fatalf("pool %d: a live call answered what the recorded one did (%v): the fixture reads nothing that varies", pool, err)
		}
		for i := range 3 {
			tape.Rewind()
			rep, err := m.Call(ctx, sandbox.Request{Body: []byte("x"), Replay: tape, Fresh: i == 2})
			if err != nil || !bytes.Equal(rep.Body, rec.Body) || rep.FuelUsed != rec.FuelUsed || tape.Unserved() != 0 {
				t.Fatalf("pool %d, replay %d: %x (fuel %d), want %x (fuel %d); %d answers unserved; %v", pool, i, rep.Body, rep.FuelUsed, rec.Body, rec.FuelUsed, tape.Unserved(), err)
			}
		}
		tape.Rewind()
		_, err = compile(t, sb, hostile("clockrand2")).Call(ctx, sandbox.Request{Body: []byte("x"), Replay: tape})
		var div *sandbox.DivergenceError
		if !errors.As(err, &div) || div.At != 0 || div.Want != "clock_time_get(0) of 8 bytes" || div.Got != "random_get(16) of 16 bytes" || div.Fuel <= 0 {
			t.Fatalf("pool %d: a module that draws before it reads the clock, replayed: %v", pool, err)
		}
	}
}

// TestATapeReplaysOutboundRequests: an outbound request's answer and body
// are on the tape; replayed, the call gets them without reaching the
// egress at all, to the same output and fuel; a replay that asks for
// another URL diverges there, naming both.
func TestATapeReplaysOutboundRequests(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{PoolSize: 2}), hostile("httpabi"))
	ctx := context.Background()
	eg := &fakeEgress{}
	tape := &sandbox.Tape{}
	req := []byte(`c{"method":"POST","url":"http://api.test/x?token=NOT-ON-TAPE"}`)
	rec, err := m.Call(ctx, sandbox.Request{Body: req, Egress: eg, Record: tape})
	if err != nil || len(tape.Answers) != 1 || tape.Answers[0].Detail != "POST http://api.test/x" {
		t.Fatalf("recorded %q: %v, %+v", rec.Body, err, tape.Answers)
	}
	tape.Rewind()
	rep, err := m.Call(ctx, sandbox.Request{Body: req, Egress: eg, Replay: tape})
	if err != nil || string(rep.Body) != string(rec.Body) || rep.FuelUsed != rec.FuelUsed || len(eg.urls) != 1 {
		t.Fatalf("replayed %q (fuel %d), want %q (fuel %d); the egress saw %v; %v", rep.Body, rep.FuelUsed, rec.Body, rec.FuelUsed, eg.urls, err)
	}
	tape.Rewind()
	_, err = m.Call(ctx, sandbox.Request{Body: []byte(`c{"method":"POST","url":"http://api.test/y"}`), Replay: tape})
	var div *sandbox.DivergenceError
	if !errors.As(err, &div) || div.Want != "http_request POST http://api.test/x" || div.Got != "http_request POST http://api.test/y" {
		t.Fatalf("a replay to another URL: %v", err)
	}
}
