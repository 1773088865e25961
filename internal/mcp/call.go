package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/service"
)

// tools/call: the invoke message a call makes, and the service's call.

// The _meta keys packd reads of a tools/call (MCP's _meta; W3C trace
// context as MCP names it).
const (
	// metaCtx is the Pack protocol's callContext of the call (an object:
	// tenantId, runId, requestId, idempotencyKey, env, secrets, settings, …),
	// what kindgi's runtime sends in an invoke's ctx.
	metaCtx         = "kindgi.com/ctx"
	metaTimeoutMs   = "kindgi.com/timeoutMs"
	metaTraceparent = "traceparent"
	metaTracestate  = "tracestate"
)

// DefaultTenant is the tenant of a call that names none, on a service not
// pinned to one.
const DefaultTenant = "default"

// DefaultRunID is the runId of a call whose ctx names none.
const DefaultRunID = "mcp"

// mcpFace is the MCP face as the service sees it: an answer (a result, or
// a tool's failure as isError) is a 200; a refusal that says "retry" is the
// 503 it is over HTTP; any other refusal is answered in the JSON-RPC answer
// (200 before MCP 2026-07-28, 400 since: said as 400).
type mcpFace struct{}

func (mcpFace) Name() string { return "mcp" }

func (mcpFace) Status(code string) int {
	switch {
	case code == "", code == service.CodeGateDenied:
		return http.StatusOK
	case retryLater[code]:
		return http.StatusServiceUnavailable
	case code == codeBadToken:
		return http.StatusUnauthorized
	case code == codeForbidden:
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// retryLater are the refusals that say the call did not run and may be
// sent again: over HTTP, a 503 with Retry-After.
var retryLater = map[string]bool{
	service.CodeDraining: true, service.CodeMissingEnv: true, service.CodeOverloaded: true,
	service.CodeTenantShare: true, service.CodeTenantBudget: true, service.CodeGateFailed: true,
}

// The MCP face's own refusal codes.
const (
	codeBadToken  = "bad-token"
	codeForbidden = "mcp-forbidden" // a Host or Origin that is not this server's
	codeBadParams = "mcp-bad-params"
)

// handler is the tools/call handler of a listed tool id.
func (f *Face) handler(id string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		t, ok := f.tool(id)
		if !ok { // a reload took it away after the SDK found it
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", id)}
		}
		var header http.Header
		if req.Extra != nil {
			header = req.Extra.Header
		}
		return f.run(ctx, req, t, f.exchanges.of(header))
	}
}

// run runs one tools/call through the service; ex is the POST it came in
// (nil: none, or one that says "retry later" its own way).
func (f *Face) run(ctx context.Context, req *sdk.CallToolRequest, t listedTool, ex *exchange) (*sdk.CallToolResult, error) {
	var header http.Header
	if req.Extra != nil {
		header = req.Extra.Header
	}
	meta := req.Params.Meta
	body, tenants, err := invokeMessage(t, req.Params.Arguments, meta, header)
	if err != nil {
		f.cfg.Service.Refused(mcpFace{}, codeBadParams)
		return nil, err
	}
	traceparent, tracestate := header.Get("Traceparent"), header.Get("Tracestate")
	if traceparent == "" {
		traceparent, _ = meta[metaTraceparent].(string)
		tracestate, _ = meta[metaTracestate].(string)
	}
	a := f.cfg.Service.Call(ctx, service.Request{
		Body:          func() ([]byte, *service.Refusal) { return body, nil },
		Timeout:       timeoutOf(meta, header),
		ClaimedTenant: tenants,
		TraceParent:   traceparent,
		TraceState:    tracestate,
		Face:          mcpFace{},
	})
	defer a.Done()
	if r := a.Refusal; r != nil {
		return refusalResult(ex, t.id, r)
	}
	return answerResult(t, a.Response)
}

// invokeMessage is the Pack protocol invoke of a tools/call: the tool (and
// the version MCP lists), the arguments as input, and ctx: the callContext
// in _meta["kindgi.com/ctx"] with its tenantId the tenant the call claims
// (kindgi-tenant-id, or ctx.tenantId; both: the same), else DefaultTenant.
// A ctx that is not an object, or a tenantId, runId or requestId that is
// not a string, is refused here, before the gate, never coerced.
func invokeMessage(t listedTool, args json.RawMessage, meta sdk.Meta, header http.Header) ([]byte, []string, error) {
	callCtx := map[string]any{}
	if raw, ok := meta[metaCtx]; ok {
		m, isObj := raw.(map[string]any)
		if !isObj {
			return nil, nil, badParams(`_meta["%s"] must be an object (the call's context)`, metaCtx)
		}
		callCtx = m
	}
	for _, k := range []string{"tenantId", "runId", "requestId", "idempotencyKey", "projectId", "orgId"} {
		if v, ok := callCtx[k]; ok {
			if _, isStr := v.(string); !isStr {
				return nil, nil, badParams(`_meta["%s"].%s must be a string`, metaCtx, k)
			}
		}
	}
	claimed := header.Values("Kindgi-Tenant-Id")
	if len(claimed) > 1 {
		return nil, nil, badParams("kindgi-tenant-id was sent %d times; send it once", len(claimed))
	}
	tenant, inCtx := callCtx["tenantId"].(string)
	switch {
	case len(claimed) == 1 && inCtx && claimed[0] != tenant:
		return nil, nil, badParams(`kindgi-tenant-id and _meta["%s"].tenantId name different tenants`, metaCtx)
	case len(claimed) == 1:
		tenant = claimed[0]
	case inCtx:
		claimed = []string{tenant}
	default:
		tenant = DefaultTenant
	}
	var ctxJSON []byte
	if len(callCtx) == 0 { // the common call: no context of its own
		ctxJSON = ojson.AppendString(append(make([]byte, 0, 64), `{"tenantId":`...), tenant)
		ctxJSON = append(ctxJSON, `,"runId":"`+DefaultRunID+`"}`...)
	} else {
		callCtx["tenantId"] = tenant
		if _, ok := callCtx["runId"]; !ok {
			callCtx["runId"] = DefaultRunID
		}
		var err error
		if ctxJSON, err = json.Marshal(callCtx); err != nil {
			return nil, nil, badParams("the call's context cannot be read: %v", err)
		}
	}
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = json.RawMessage("{}")
	}
	b := make([]byte, 0, len(t.invokePrefix)+len(args)+len(ctxJSON)+10)
	b = append(b, t.invokePrefix...)
	b = append(b, args...)
	b = append(b, `,"ctx":`...)
	b = append(b, ctxJSON...)
	return append(b, '}'), claimed, nil
}

// timeoutOf is the caller's limit on a call: kindgi-timeout-ms, else
// _meta["kindgi.com/timeoutMs"] (a positive integer of milliseconds); 0 (the
// tool's limits and host's default decide) when neither is given.
func timeoutOf(meta sdk.Meta, header http.Header) time.Duration {
	ms := int64(0)
	if h := header.Get("Kindgi-Timeout-Ms"); h != "" {
		ms, _ = strconv.ParseInt(h, 10, 64)
	} else if v, ok := meta[metaTimeoutMs].(float64); ok && v == float64(int64(v)) {
		ms = int64(v)
	}
	if ms <= 0 {
		return 0
	}
	return time.Duration(min(ms, service.MaxTimeout.Milliseconds()+1)) * time.Millisecond
}

func badParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}
