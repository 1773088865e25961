package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/ojson"
)

// The tools an index gives MCP: which, under what name, with what schemas
// and annotations.

// maxNameLen is MCP's longest tool name.
const maxNameLen = 128

// IndexProblems lists why the MCP face cannot serve an index's tools, one
// problem per tool, naming it as a load problem does: a public tool whose
// id is not an MCP tool name (1 to 128 of A–Z, a–z, 0–9, "_", "-", "."),
// or whose input schema is not an object's. An internal tool is never
// served over MCP and has none. With the MCP face on, these are load
// problems: the pack does not load (or reload) until they are mended.
func IndexProblems(idx host.Index) []string {
	var problems []string
	for i, t := range idx.Tools {
		if t.Internal {
			continue
		}
		where := fmt.Sprintf("tools[%d] (%s)", i, t.ID)
		if why := badName(t.ID); why != "" {
			problems = append(problems, fmt.Sprintf(`%s "id" cannot be an MCP tool name: %s (or mark the tool "visibility": "internal")`, where, why))
		}
		if _, why := inputSchema(t.Input); why != "" {
			problems = append(problems, fmt.Sprintf(`%s "input" cannot be an MCP tool's input schema: %s`, where, why))
		}
	}
	if len(problems) > 0 {
		return problems
	}
	// What the SDK itself refuses of a tool (x-mcp-header annotations it
	// cannot serve): asked of a server of its own, whose refusal is a
	// panic.
	for _, lt := range listedTools(idx) {
		if why := sdkRefuses(lt.tool); why != "" {
			problems = append(problems, fmt.Sprintf(`tool %s cannot be served over MCP: %s`, lt.id, why))
		}
	}
	return problems
}

// sdkRefuses is why the SDK will not serve a tool, or "".
func sdkRefuses(t *sdk.Tool) (why string) {
	defer func() {
		if p := recover(); p != nil {
			why = fmt.Sprint(p)
		}
	}()
	sdk.NewServer(&sdk.Implementation{Name: "check"}, nil).AddTool(t, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return nil, nil
	})
	return ""
}

func badName(name string) string {
	if len(name) > maxNameLen {
		return fmt.Sprintf("it is %d bytes long, over MCP's %d", len(name), maxNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Sprintf("%q is not one of A-Z, a-z, 0-9, _, - and .", r)
		}
	}
	return ""
}

// inputSchema is a tool's input schema as MCP lists it: MCP's arguments are
// always an object, and its inputSchema must say "type": "object". A schema
// that says nothing of the type (true, {}, one with properties only) is
// listed with "type": "object" added; one that allows no object cannot be
// listed.
func inputSchema(schema any) (json.RawMessage, string) {
	switch s := schema.(type) {
	case bool:
		if !s {
			return nil, "false allows no input at all"
		}
		return json.RawMessage(`{"type":"object"}`), ""
	case *ojson.Object:
		typ, ok := s.Get("type")
		if !ok {
			o := &ojson.Object{Keys: append([]string{"type"}, s.Keys...), Vals: append([]any{"object"}, s.Vals...)}
			return ojson.Encode(o), ""
		}
		if typ != "object" {
			return nil, fmt.Sprintf(`its "type" is %s, not "object"`, ojson.Encode(typ))
		}
		return ojson.Encode(s), ""
	}
	return nil, "it is not a JSON Schema object"
}

// outputSchema is a tool's output schema as MCP lists it: only one whose
// type is "object", the one clients of MCP before 2026-07-28 accept (and
// check structuredContent against); none otherwise, and the answer's text
// block carries the output.
func outputSchema(schema any) json.RawMessage {
	if s, ok := schema.(*ojson.Object); ok {
		if typ, _ := s.Get("type"); typ == "object" {
			return ojson.Encode(s)
		}
	}
	return nil
}

// listedTool is one tool as MCP lists it, and which indexed version a call
// of it runs.
type listedTool struct {
	tool    *sdk.Tool
	id      string
	version string
	// headerParams: its input schema names x-mcp-header parameters, which
	// only the SDK checks against a request's headers (no fast path).
	headerParams bool
	// invokePrefix begins the invoke message of a call of it, up to its
	// input: {"v":2,"kind":"invoke","tool":{"id":…,"version":…},"input":
	invokePrefix []byte
}

// listedTools are the tools of an index MCP lists: each public tool id
// once, in index order, as the last indexed version of it (the one a
// caller naming no version gets described).
func listedTools(idx host.Index) []listedTool {
	var ids []string
	last := map[string]*host.ToolSpec{}
	for _, t := range idx.Tools {
		if t.Internal {
			continue
		}
		if last[t.ID] == nil {
			ids = append(ids, t.ID)
		}
		last[t.ID] = t
	}
	out := make([]listedTool, 0, len(ids))
	for _, id := range ids {
		t := last[id]
		in, why := inputSchema(t.Input)
		if why != "" || badName(t.ID) != "" {
			continue // IndexProblems refused it at load
		}
		lt := listedTool{id: t.ID, version: t.Version, headerParams: bytes.Contains(in, []byte(`"x-mcp-header"`)), tool: &sdk.Tool{
			Name: t.ID, Description: t.Description, InputSchema: in, Annotations: annotations(t),
		}}
		if o := outputSchema(t.Output); o != nil {
			lt.tool.OutputSchema = o
		}
		tool := &ojson.Object{Keys: []string{"id"}, Vals: []any{t.ID}}
		if t.Version != "" {
			tool.Set("version", t.Version)
		}
		lt.invokePrefix = append(ojson.Append([]byte(`{"v":2,"kind":"invoke","tool":`), tool), `,"input":`...)
		out = append(out, lt)
	}
	return out
}

// readEffects are the effect kinds that change nothing.
var readEffects = []string{"reads", "read"}

// deleteEffects are the effect kinds that destroy.
var deleteEffects = []string{"deletes", "delete", "destroys"}

// annotations are what the index says of a tool, as MCP's hints:
// readOnlyHint when it says mutating: false or lists only effects that
// read; destructiveHint, for a tool that may write, true when an effect
// deletes and false when effects are listed and none does (unsaid
// otherwise: MCP's default, true); openWorldHint, whether its network
// reaches anything.
func annotations(t *host.ToolSpec) *sdk.ToolAnnotations {
	a := &sdk.ToolAnnotations{OpenWorldHint: ptr(t.ReachesNetwork())}
	readOnly := t.Mutating != nil && !*t.Mutating
	if !readOnly && len(t.EffectKinds) > 0 {
		readOnly = !slices.ContainsFunc(t.EffectKinds, func(k string) bool { return !slices.Contains(readEffects, k) })
	}
	a.ReadOnlyHint = readOnly
	if !readOnly && len(t.EffectKinds) > 0 {
		a.DestructiveHint = ptr(slices.ContainsFunc(t.EffectKinds, func(k string) bool { return slices.Contains(deleteEffects, k) }))
	}
	return a
}

func ptr[T any](v T) *T { return &v }
