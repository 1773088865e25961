package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kindgi/packd/internal/sandbox"
)

// TestACommandModuleSaysHowToBuildAReactor: a module that exports _start
// and no _initialize (Go's default build mode, whose exports trap with
// "unreachable" until _start has run) is refused at describe with the
// build line that makes a reactor, and runs nothing.
func TestACommandModuleSaysHowToBuildAReactor(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	m := compile(t, sb, hostile("command"))
	_, err := m.Describe(context.Background())
	if !errors.Is(err, sandbox.ErrMissingExport) || !strings.Contains(err.Error(), "WASI command (it exports _start, not _initialize)") ||
		!strings.Contains(err.Error(), "GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared") {
		t.Fatalf("describe: %v", err)
	}
	if m.Shape() == nil {
		t.Fatal("a command module has a servable shape")
	}
}

// TestALoadThatFailsSaysWhatTheGuestWrote: a guest whose _initialize
// panics (it writes Go's panic text on stderr, then traps) fails to load
// with the part that failed and its own panic text, not only "wasm trap:
// unreachable"; what it wrote still reaches the service's stderr.
func TestALoadThatFailsSaysWhatTheGuestWrote(t *testing.T) {
	var stderr syncBuffer
	sb := newSandbox(t, sandbox.Config{Stderr: &stderr})
	m := compile(t, sb, hostile("initpanic"))
	_, err := m.Describe(context.Background())
	var trap *sandbox.TrapError
	if !errors.As(err, &trap) || err.Error() != "_initialize: wasm trap: unreachable; the guest wrote: panic: the config is missing: set ACME_URL" {
		t.Fatalf("describe: %v", err)
	}
	_ = sb.Close(context.Background()) // flushes the lines
	if !strings.Contains(stderr.String(), "starting\npanic: the config is missing: set ACME_URL\n\ngoroutine 1 [running]:\n") {
		t.Fatalf("stderr: %q", stderr.String())
	}
}
