package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kindgi/packd/internal/ojson"
)

// The fast path: a tools/call of MCP 2026-07-28 outside any session, the
// call every agent makes most, answered here rather than through the SDK's
// transport, which spends per POST a session, a JSON-RPC connection and
// its goroutines, and several decoders of 32 KiB buffers each (measured,
// cmd/mcpbench: through the SDK, 0.22× /v1/invoke's calls a second at
// c=32). Only a POST the SDK would answer with exactly what this writes
// takes it (fastCall says which); the SDK answers every other, and a test
// holds the two to the same bytes, status and headers for each kind of
// answer (fast_test.go).

// The protocol revision the fast path speaks, and the _meta keys it needs.
const (
	fastRevision      = "2026-07-28"
	metaProtocol      = "io.modelcontextprotocol/protocolVersion"
	metaCapabilities  = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfoKey = "io.modelcontextprotocol/serverInfo"
)

// fastRequest is a tools/call as the fast path reads it.
type fastRequest struct {
	id   []byte // as the SDK writes it back
	name string
	args json.RawMessage
	meta sdk.Meta // the keys packd reads, as the SDK would decode them
}

// fastCall reads a POST that may take the fast path: a single tools/call
// of MCP 2026-07-28 outside a session, with every header and _meta field
// that revision asks for, of a tool listed now that has no header
// parameters. nil: the SDK answers it. It reads the body with ojson
// (a duplicate key's last value wins, as in the SDK's decoder).
func (f *Face) fastCall(r *http.Request, body []byte) (*fastRequest, listedTool) {
	h := r.Header
	if h.Get(headerProtocol) != fastRevision || h.Get("Mcp-Method") != "tools/call" || h.Get(headerSession) != "" ||
		!isJSONContent(h.Get("Content-Type")) || !acceptsBoth(h.Values("Accept")) {
		return nil, listedTool{}
	}
	v, err := ojson.Decode(body)
	top, ok := v.(*ojson.Object)
	if err != nil || !ok || str(top, "jsonrpc") != "2.0" || str(top, "method") != "tools/call" {
		return nil, listedTool{}
	}
	req := &fastRequest{}
	if req.id = idJSON(top); req.id == nil {
		return nil, listedTool{}
	}
	pv, _ := top.Get("params")
	params, ok := pv.(*ojson.Object)
	if !ok || has(params, "inputResponses") || has(params, "requestState") {
		return nil, listedTool{}
	}
	req.name = str(params, "name")
	if req.name == "" || req.name != h.Get("Mcp-Name") {
		return nil, listedTool{}
	}
	if a, ok := params.Get("arguments"); ok {
		req.args = ojson.Append(nil, a)
	}
	mv, _ := params.Get("_meta")
	meta, ok := mv.(*ojson.Object)
	if !ok || str(meta, metaProtocol) != fastRevision {
		return nil, listedTool{}
	}
	// The client's capabilities: an object the SDK can read (most are {}).
	caps, _ := meta.Get(metaCapabilities)
	co, isObj := caps.(*ojson.Object)
	var cc *sdk.ClientCapabilities
	if !isObj || co.Len() > 0 && json.Unmarshal(ojson.Append(nil, co), &cc) != nil {
		return nil, listedTool{}
	}
	req.meta = sdk.Meta{}
	for _, k := range []string{metaCtx, metaTimeoutMs, metaTraceparent, metaTracestate} {
		if v, ok := meta.Get(k); ok {
			req.meta[k] = ojson.Plain(v)
		}
	}
	f.sync()
	t, ok := f.tool(req.name)
	if !ok || t.headerParams {
		return nil, listedTool{}
	}
	return req, t
}

func str(o *ojson.Object, key string) string {
	v, _ := o.Get(key)
	s, _ := v.(string)
	return s
}

func has(o *ojson.Object, key string) bool {
	_, ok := o.Get(key)
	return ok
}

// idJSON is a request's id as the SDK writes it back: a string, or an
// integer (one written 1.0 is 1); nil for any other.
func idJSON(top *ojson.Object) []byte {
	switch id, _ := top.Get("id"); id := id.(type) {
	case string:
		if len(id) > maxIDBytes {
			return nil
		}
		b, _ := json.Marshal(id)
		return b
	case float64:
		if id != math.Trunc(id) || math.Abs(id) > 1<<53 {
			return nil
		}
		return strconv.AppendInt(nil, int64(id), 10)
	}
	return nil
}

func isJSONContent(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// acceptsBoth says whether Accept names both application/json and
// text/event-stream (or a wildcard), as the SDK asks of a POST.
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// serveFast answers a fast-path call.
func (f *Face) serveFast(w http.ResponseWriter, r *http.Request, req *fastRequest, t listedTool) {
	f.fastServed.Add(1)
	params := &sdk.CallToolParamsRaw{Name: req.name, Arguments: req.args, Meta: req.meta}
	res, err := f.run(r.Context(), &sdk.CallToolRequest{Params: params, Extra: &sdk.RequestExtra{Header: r.Header}}, t, nil)
	hdr := w.Header()
	hdr["Cache-Control"] = cacheControl
	hdr["Content-Type"] = jsonContent
	var b bytes.Buffer
	b.Grow(256)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(req.id)
	status := http.StatusOK
	if err != nil {
		var jerr *jsonrpc.Error
		if !errors.As(err, &jerr) {
			jerr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		e, _ := json.Marshal(jerr)
		b.WriteString(`,"error":`)
		b.Write(e)
		switch jerr.Code {
		case jsonrpc.CodeInvalidParams:
			status = http.StatusBadRequest
		case codeRetryLater:
			status = http.StatusServiceUnavailable
			hdr.Set("Retry-After", strconv.Itoa(retryAfterOf(jerr)))
		}
	} else {
		b.WriteString(`,"result":`)
		f.writeResult(&b, res)
	}
	b.WriteByte('}')
	out := b.Bytes()
	if needsHTMLEscape(out) { // as encoding/json writes every string
		var e bytes.Buffer
		json.HTMLEscape(&e, out)
		out = e.Bytes()
	}
	hdr["Content-Length"] = []string{strconv.Itoa(len(out))}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(f.writeTimeout(len(out))))
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// needsHTMLEscape says whether JSON text holds what encoding/json escapes
// for HTML: <, >, &, U+2028 and U+2029.
func needsHTMLEscape(b []byte) bool {
	return bytes.ContainsAny(b, "<>&\u2028\u2029")
}

// onlyText is the one text block of a result's content.
func onlyText(c []sdk.Content) (*sdk.TextContent, bool) {
	if len(c) != 1 {
		return nil, false
	}
	tc, ok := c[0].(*sdk.TextContent)
	return tc, ok && tc.Meta == nil && tc.Annotations == nil
}

var (
	cacheControl = []string{"no-cache, no-transform"}
	jsonContent  = []string{"application/json"}
)

// writeResult writes a CallToolResult as the SDK writes it under MCP
// 2026-07-28: the server's info in _meta, and resultType "complete".
func (f *Face) writeResult(b *bytes.Buffer, res *sdk.CallToolResult) {
	b.WriteString(`{"_meta":{"` + metaServerInfoKey + `":`)
	b.Write(f.serverInfo)
	b.WriteString(`},"content":`)
	if tc, ok := onlyText(res.Content); ok {
		// as TextContent's MarshalJSON writes it
		text, _ := json.Marshal(tc.Text)
		b.WriteString(`[{"type":"text","text":`)
		b.Write(text)
		b.WriteString(`}]`)
	} else {
		content, _ := json.Marshal(res.Content)
		b.Write(content)
	}
	switch sc := res.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		// host's output: compact JSON, which json.Marshal would only
		// escape for HTML (done once below)
		b.WriteString(`,"structuredContent":`)
		b.Write(sc)
	default:
		out, _ := json.Marshal(sc)
		b.WriteString(`,"structuredContent":`)
		b.Write(out)
	}
	if res.IsError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteString(`,"resultType":"complete"}`)
}
