package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/sandbox"
)

// The methods below word every error message about a call.

func (t *Call) kind() string { return string(t.Target) }

// errorFor builds an error message about t.
func (t *Call) errorFor(code abi.Code, msg string) *abi.Error {
	e := &abi.Error{Code: code, Message: msg}
	if t.Target == TargetCheck {
		e.CheckID = t.ID
	} else {
		e.ToolID = t.ID
	}
	return e
}

func (t *Call) shapeCode() abi.Code {
	if t.Target == TargetCheck {
		return abi.CodeCheckShapeInvalid
	}
	return abi.CodeHandlerShapeInvalid
}

func (t *Call) thrown(c abi.Cause) *abi.Error {
	e := t.errorFor(abi.CodeHandlerThrow, fmt.Sprintf("Handler for %s %q threw: %s: %s", t.kind(), t.ID, c.Name, c.Message))
	e.Cause = &c
	return e
}

// late is the deadline or cancellation error once the call's context is
// done or its deadline has passed by the clock (the context's timer fires
// late when every core is busy), else nil: the deadline covers validation
// and decoding too, and no result goes out after it.
func (t *Call) late(ctx context.Context) *abi.Error {
	switch err := ctx.Err(); {
	case err == nil:
		// time.Until reads only the monotonic clock (time.Now reads the
		// wall clock too): a call asks five times.
		if d, ok := ctx.Deadline(); ok && time.Until(d) <= 0 {
			return t.guestError("", sandbox.ErrDeadline, 0)
		}
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return t.guestError("", sandbox.ErrDeadline, 0)
	default:
		return t.guestError("", sandbox.ErrCancelled, 0)
	}
}

// guestError maps everything the sandbox can return, and a module that could
// not be loaded, to a protocol error. It is the one place that does so.
func (t *Call) guestError(modPath string, err error, fuelUsed int64) *abi.Error {
	var (
		exit *sandbox.ExitError
		trap *sandbox.TrapError
		abiE *sandbox.ABIError
	)
	switch {
	case errors.Is(err, sandbox.ErrDeadline):
		return t.errorFor(abi.CodeDeadlineExceeded, t.ID+" passed its deadline")
	case errors.Is(err, sandbox.ErrCancelled):
		return t.errorFor(abi.CodeCancelled, t.ID+" was cancelled")
	case errors.Is(err, sandbox.ErrOutOfFuel):
		return t.errorFor(abi.CodeDeadlineExceeded, fmt.Sprintf("%s passed its deadline: it ran out of fuel after using %d units", t.ID, fuelUsed))
	case errors.As(err, &exit):
		return t.thrown(abi.Cause{Name: "ExitError", Message: exit.Error()})
	case errors.As(err, &trap):
		return t.thrown(abi.Cause{Name: "RuntimeError", Message: trap.Message, Stack: trap.Stack})
	case errors.As(err, &abiE):
		return t.thrown(abi.Cause{Name: "AbiError", Message: abiE.Error()})
	case errors.Is(err, sandbox.ErrOutputTooLarge):
		if t.Target == TargetCheck {
			return t.errorFor(abi.CodeCheckShapeInvalid, fmt.Sprintf("Check %q produced a result over the response size limit", t.ID))
		}
		return t.errorFor(abi.CodeOutputValidationFailed, fmt.Sprintf("Tool %q handler produced output over the response size limit", t.ID))
	case errors.Is(err, sandbox.ErrNoResponse):
		return t.errorFor(t.shapeCode(), fmt.Sprintf("Handler for %s %q returned without writing a response", t.kind(), t.ID))
	case errors.Is(err, sandbox.ErrMissingExport):
		return t.errorFor(t.shapeCode(), fmt.Sprintf("Module %s has no handler for %s %q: %v", modPath, t.kind(), t.ID, err))
	default:
		e := t.errorFor(abi.CodeHandlerImportFailed, fmt.Sprintf("Handler for %s %q could not be loaded from %s: %v", t.kind(), t.ID, modPath, err))
		e.Cause = &abi.Cause{Name: "Error", Message: err.Error()}
		return e
	}
}

// notJSON says why bytes are not JSON, in a message's words: what is wrong
// and where, without the decoder's name (a *ojson.SyntaxError's Detail).
func notJSON(err error) string {
	if se := (*ojson.SyntaxError)(nil); errors.As(err, &se) {
		return se.Detail()
	}
	return err.Error()
}
