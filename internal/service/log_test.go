package service

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTraceparent(t *testing.T) {
	cases := map[string]string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "4bf92f3577b34da6a3ce929d0e0e4736",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": "",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": "",
		"garbage": "",
		" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more ": "4bf92f3577b34da6a3ce929d0e0e4736",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0":         "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7x01":        "",
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01":        "",
		"0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":        "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bG-01":        "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x":        "",
	}
	for h, want := range cases {
		if got := traceIDFrom(h); got != want {
			t.Errorf("traceIDFrom(%q) = %q, want %q", h, got, want)
		}
	}
}

func TestRecordLayout(t *testing.T) {
	var buf bytes.Buffer
	r := NewLog(&buf)
	r.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC) }
	r.Line("warn", "tool x handler-throw 3ms",
		Field{"target", "tool"}, Field{"runId", "r"}, Field{"traceId", ""}, Field{"tenantId", "t"}, Field{"toolId", "x"}, Field{"durationMs", 3})
	want := `{"time":"2026-01-02T03:04:05.678Z","level":"warn","severity":"WARNING","subsystem":"pack","message":"tool x handler-throw 3ms","tenantId":"t","runId":"r","toolId":"x","target":"tool","durationMs":3}` + "\n"
	if buf.String() != want {
		t.Fatalf("got  %s\nwant %s", buf.String(), want)
	}
	buf.Reset()
	r.Lifecycle("stopped", "info", "Stopped")
	if !strings.Contains(buf.String(), `"message":"Stopped","event":"stopped","kind":"stopped"}`) {
		t.Fatalf("lifecycle: %s", buf.String())
	}
}
