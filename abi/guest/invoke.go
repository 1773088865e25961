package guest

import (
	"encoding/json"
	"fmt"

	"github.com/kindgi/packd/abi/guest/wire"
)

// Invoke runs a tool's handler natively, as packd would call it: with
// input encoded to JSON and ctx (nil: tenant "test-tenant", run
// "test-run") as the call's ctx. It returns the output as JSON, or the
// thrown error as an *Error. For a pack's unit tests (`go test`); input
// is not validated against the tool's schema, as packd would.
func Invoke(id string, input any, ctx *Context) (json.RawMessage, error) {
	if ctx == nil {
		ctx = &Context{TenantID: "test-tenant", RunID: "test-run"}
	}
	in, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("guest.Invoke: input: %w", err)
	}
	c, err := json.Marshal(ctx)
	if err != nil {
		return nil, fmt.Errorf("guest.Invoke: ctx: %w", err)
	}
	req := wire.Request{Kind: wire.KindInvoke, Input: in, Ctx: c}
	req.Tool.ID = id
	return run(req)
}

// InvokeCheck runs a check's handler natively with config and trace
// encoded to JSON; as Invoke.
func InvokeCheck(id string, config, trace any) (json.RawMessage, error) {
	cfg, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("guest.InvokeCheck: config: %w", err)
	}
	tr, err := json.Marshal(trace)
	if err != nil {
		return nil, fmt.Errorf("guest.InvokeCheck: trace: %w", err)
	}
	req := wire.Request{Kind: wire.KindCheckInvoke, Config: cfg, Trace: tr}
	req.Check.ID = id
	return run(req)
}

func run(req wire.Request) (json.RawMessage, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	status, resp := Dispatch(b)
	switch status {
	case wire.StatusOK:
		return resp, nil
	case wire.StatusNoHandler:
		return nil, &Error{Name: "NoHandler", Message: "this module has no handler for " + req.Kind + " " + req.Tool.ID + req.Check.ID}
	}
	var t wire.Thrown
	_ = json.Unmarshal(resp, &t)
	return nil, &Error{Name: t.Name, Message: t.Message}
}
