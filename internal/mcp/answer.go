package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kindgi/packd/internal/service"
)

// How an answer reads over MCP. A result is structuredContent (when the
// output is an object) and a text block of the same JSON. A failure of the
// tool (its input, its code, its output, its deadline, the gate's deny) is
// a result with isError, in words a model can act on. What is not the
// tool's (no such tool, a malformed call) is a JSON-RPC error; a call that
// did not run and may be sent again (overloaded, draining) is the 503 of
// HTTP with Retry-After, or, where there is no HTTP, a JSON-RPC error that
// says so.

// codeRetryLater is the JSON-RPC error code of a call refused before it
// ran that may be sent again (a server error, in JSON-RPC's range for them).
const codeRetryLater = -32000

// retryAfterSeconds is how long a refused caller is told to wait when
// the refusal names no wait of its own.
const retryAfterSeconds = 1

// resultPrefix begins every result message host writes.
var resultPrefix = []byte(`{"v":2,"kind":"result","output":`)

// message is a Pack protocol answer, as far as MCP reads it.
type message struct {
	Kind    string          `json:"kind"`
	Output  json.RawMessage `json:"output"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Issues  []issue         `json:"issues"`
	Cause   *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"cause"`
}

type issue struct {
	InstancePath string `json:"instancePath"`
	Message      string `json:"message"`
}

// answerResult is the CallToolResult of the service's answer.
func answerResult(t listedTool, response []byte) (*sdk.CallToolResult, error) {
	// host writes a result as abi.EncodeResult does: read without a decoder
	if out, ok := bytes.CutPrefix(response, resultPrefix); ok && len(out) > 0 && out[len(out)-1] == '}' {
		out = out[:len(out)-1]
		r := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(out)}}}
		if isObject(out) {
			r.StructuredContent = json.RawMessage(out)
		}
		return r, nil
	}
	var m message
	if err := json.Unmarshal(response, &m); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the pack's answer cannot be read"}
	}
	if m.Kind == "result" {
		r := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(m.Output)}}}
		if isObject(m.Output) {
			r.StructuredContent = m.Output
		}
		return r, nil
	}
	switch m.Code {
	case "tool-not-in-pack", "tool-version-mismatch":
		// a reload changed the tool between listing and calling it
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: m.Message}
	case "malformed-message", "unexpected-message-kind", "unknown-protocol-version":
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: m.Message}
	}
	return toolError(failureText(t.id, &m)), nil
}

// failureText says why a call of a tool failed, for a model to act on.
func failureText(id string, m *message) string {
	var b strings.Builder
	switch m.Code {
	case "input-validation-failed":
		fmt.Fprintf(&b, "The arguments do not fit the input schema of %s; mend them and call again:", id)
		writeIssues(&b, m.Issues, "arguments")
	case "output-validation-failed":
		fmt.Fprintf(&b, "%s answered with an output its own schema does not allow (a fault of the tool, not of the arguments):", id)
		writeIssues(&b, m.Issues, "output")
	case "handler-throw":
		fmt.Fprintf(&b, "%s failed: %s", id, causeText(m))
	case "deadline-exceeded":
		fmt.Fprintf(&b, "%s did not finish within its time limit: %s", id, m.Message)
	case "cancelled":
		fmt.Fprintf(&b, "The call of %s was cancelled.", id)
	default:
		fmt.Fprintf(&b, "%s failed (%s): %s", id, m.Code, m.Message)
	}
	return b.String()
}

func causeText(m *message) string {
	if c := m.Cause; c != nil && c.Message != "" {
		if c.Name != "" && c.Name != "Error" {
			return c.Name + ": " + c.Message
		}
		return c.Message
	}
	return m.Message
}

// writeIssues writes each issue as a line: where, then what is wrong.
func writeIssues(b *strings.Builder, issues []issue, root string) {
	for _, is := range issues {
		where := root
		if is.InstancePath != "" {
			where = root + " at " + is.InstancePath
		}
		fmt.Fprintf(b, "\n- %s: %s", where, is.Message)
	}
}

func toolError(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// refusalResult answers a call the service refused before its pack code
// ran: the gate's deny is the tool's failure (isError, with the policy's
// reason); a call that may be sent again is marked for the HTTP face's 503
// and is a JSON-RPC error; any other is a JSON-RPC error.
func refusalResult(ex *exchange, id string, r *service.Refusal) (*sdk.CallToolResult, error) {
	switch {
	case r.Code == service.CodeGateDenied:
		return toolError(fmt.Sprintf("The policy does not allow this call of %s: %s", id, r.Message)), nil
	case retryLater[r.Code]:
		wait := r.RetryAfterSeconds()
		if ex != nil {
			ex.retryLater(r.Code, wait)
		}
		msg := "The service is at its capacity: the call did not run; send it again in a second"
		switch r.Code {
		case service.CodeTenantBudget:
			msg = fmt.Sprintf("This tenant has spent its budget for now: the call did not run; send it again in %d s", wait)
		case service.CodeDraining:
			msg = "The service is shutting down: the call did not run; send it to another instance or again later"
		case service.CodeMissingEnv:
			msg = "The service is not ready (missing env " + strings.Join(r.MissingEnv, ", ") + "): the call did not run"
		case service.CodeGateFailed:
			msg = "The policy could not decide: the call did not run; send it again later"
		}
		return nil, &jsonrpc.Error{Code: codeRetryLater, Message: msg,
			Data: json.RawMessage(fmt.Sprintf(`{"code":%q,"retryAfterSeconds":%d}`, r.Code, wait))}
	case r.Code == service.CodeTenantMismatch:
		msg := "This pack service is pinned to another tenant"
		if r.NoTenant {
			msg = `This pack service is pinned to a tenant: name it (kindgi-tenant-id, or _meta["` + metaCtx + `"].tenantId)`
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg, Data: json.RawMessage(`{"code":"pack-tenant-mismatch"}`)}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "The call was refused (" + r.Code + ")"}
}

// retryAfterOf is the wait a JSON-RPC error of a refused call names
// (refusalResult's data), else retryAfterSeconds.
func retryAfterOf(e *jsonrpc.Error) int {
	var d struct {
		RetryAfterSeconds int `json:"retryAfterSeconds"`
	}
	if json.Unmarshal(e.Data, &d) != nil || d.RetryAfterSeconds < 1 {
		return retryAfterSeconds
	}
	return d.RetryAfterSeconds
}

func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}
