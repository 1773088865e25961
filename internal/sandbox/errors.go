package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

var (
	// ErrDeadline: the call's deadline passed before the guest finished.
	ErrDeadline = errors.New("sandbox: deadline exceeded")
	// ErrCancelled: the call's context was cancelled before the guest finished.
	ErrCancelled = errors.New("sandbox: cancelled")
	// ErrOutputTooLarge: the guest wrote a response over Config.MaxResponseBytes.
	ErrOutputTooLarge = errors.New("sandbox: response too large")
	// ErrNoResponse: the guest returned without calling response_write.
	ErrNoResponse = errors.New("sandbox: guest wrote no response")
	// ErrMissingExport: the module lacks an export the guest ABI requires.
	ErrMissingExport = errors.New("sandbox: missing export")
	// ErrOutOfFuel: the call spent its whole fuel budget.
	ErrOutOfFuel = errors.New("sandbox: out of fuel")
	// ErrInvalidModule: the module is not one packd runs: malformed or
	// invalid as written, over a limit of the loader or the fuel pass, or
	// importing what packd does not provide.
	ErrInvalidModule = errors.New("sandbox: invalid module")
	// ErrCompileTimeout: a module's compilation took longer than
	// Config.CompileTimeout.
	ErrCompileTimeout = errors.New("sandbox: compilation took too long")
	// ErrMemoryBudget: the call's initial memory does not fit in what is
	// left of Config.MemoryBudget; the call did not start.
	ErrMemoryBudget = errors.New("sandbox: memory budget spent")
	// ErrMemoryShare (an ErrMemoryBudget): the memory of the call's
	// instance would take its Request.Account past its share; the call
	// did not start.
	ErrMemoryShare = fmt.Errorf("%w: the call's account holds its share of it", ErrMemoryBudget)
	// ErrMemoryLimit: the instance's memory is already over the call's
	// Request.MemoryLimit when the call would start (the module's initial
	// memory, or its snapshot's); the call did not start.
	ErrMemoryLimit = errors.New("sandbox: the instance's memory is over the call's memory limit")
	// ErrLoadLimit: guest code run at load (start function, _initialize,
	// kindgi_describe) went past Config.LoadTimeout or Config.LoadFuel.
	ErrLoadLimit = errors.New("sandbox: load-time code over its limit")
)

// ExitError: the guest called proc_exit.
type ExitError struct{ Code uint32 }

func (e *ExitError) Error() string { return fmt.Sprintf("pack code exited with code %d", e.Code) }

// TrapError: the guest trapped (unreachable, out-of-bounds memory access,
// stack exhaustion, ...). Message is the trap's reason, Stack the wasm stack.
type TrapError struct {
	Message string
	Stack   string
}

func (e *TrapError) Error() string { return "wasm trap: " + e.Message }

// ABIError: the guest broke the guest ABI (a pointer or length outside its
// memory, a second response, a wrong result type).
type ABIError struct {
	Func   string
	Reason string
}

func (e *ABIError) Error() string { return e.Func + ": " + e.Reason }

// classify turns what wazero returned from a guest function into one of the
// package's errors. ctx decides between deadline and cancellation.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return ErrDeadline
		}
		return ErrCancelled
	}
	if errors.Is(err, ErrDeadline) { // the clock said so before the timer
		return ErrDeadline
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return ErrDeadline // a failure after the deadline, the timer late
	}
	var abiErr *ABIError
	if errors.As(err, &abiErr) {
		return abiErr
	}
	var div *DivergenceError
	if errors.As(err, &div) {
		return div
	}
	if errors.Is(err, ErrOutputTooLarge) {
		return ErrOutputTooLarge
	}
	if errors.Is(err, ErrOutOfFuel) {
		return ErrOutOfFuel
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return &ExitError{Code: exit.ExitCode()}
	}
	msg, stack, _ := strings.Cut(err.Error(), "\n")
	msg = strings.TrimPrefix(msg, "wasm error: ")
	stack = strings.TrimPrefix(stack, "wasm stack trace:\n")
	return &TrapError{Message: msg, Stack: strings.TrimSpace(stack)}
}
