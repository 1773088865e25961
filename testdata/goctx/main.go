//go:build wasip1

// Command goctx answers with what the Go SDK read from its request: a
// tool call's id, input and ctx (every field of guest.Context, and the
// raw ctx), a check's config and trace. Run through packd, it shows what
// a Go handler is given; encoding/json, reading the same request, must
// give the same (internal/sandbox's TestGoHandlersAreGivenWhatEncodingJSONReads).
package main

import (
	"encoding/json"

	"github.com/kindgi/packd/abi/guest"
)

func init() {
	guest.AnyTool(func(id string, input json.RawMessage, ctx *guest.Context) (any, error) {
		return map[string]any{"id": id, "input": input, "ctx": ctx, "raw": ctx.Raw}, nil
	})
	guest.Check("goctx.check", func(config, trace json.RawMessage) (any, error) {
		return map[string]any{"passed": true, "config": config, "trace": trace}, nil
	})
}

func main() {}
