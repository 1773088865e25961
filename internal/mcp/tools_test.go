package mcp

import (
	"strings"
	"testing"

	"github.com/kindgi/packd/internal/host"
)

// TestIndexProblemsNameWhatMCPCannotServe: a public tool whose id is not an
// MCP tool name, whose input is not an object, or whose schema the SDK
// refuses (an x-mcp-header it cannot serve: the SDK panics on it) is a load
// problem naming the tool; an internal tool is not served over MCP and is
// none; a good index has none.
func TestIndexProblemsNameWhatMCPCannotServe(t *testing.T) {
	tool := func(id, input, visibility string) string {
		v := ""
		if visibility != "" {
			v = `,"visibility":"` + visibility + `"`
		}
		return `{"id":"` + id + `","input":` + input + `,"output":{"type":"object"},"modulePath":"m.wasm"` + v + `}`
	}
	for _, c := range []struct {
		what, tools, want string
	}{
		{"a good index", tool("acme.ledger.record-expense", `{"type":"object"}`, "") + "," + tool("a_b-c.D9", "true", ""), ""},
		{"a space in an id", tool("acme ledger", `{"type":"object"}`, ""), `"id" cannot be an MCP tool name: ' ' is not one of`},
		{"an @ in an id", tool("acme@1", `{"type":"object"}`, ""), `'@' is not one of`},
		{"an id of 129 bytes", tool(strings.Repeat("a", 129), `{"type":"object"}`, ""), "129 bytes long, over MCP's 128"},
		{"an input of strings", tool("a", `{"type":"string"}`, ""), `its "type" is "string", not "object"`},
		{"an input that allows nothing", tool("a", `false`, ""), "false allows no input at all"},
		{"an x-mcp-header on an object", tool("a", `{"type":"object","properties":{"p":{"type":"object","x-mcp-header":"X-P"}}}`, ""), "tool a cannot be served over MCP: AddTool"},
		{"an x-mcp-header that is no header name", tool("a", `{"type":"object","properties":{"p":{"type":"string","x-mcp-header":"a b"}}}`, ""), "invalid character"},
		{"an internal tool MCP could not name", tool("acme ledger", `{"type":"string"}`, "internal"), ""},
	} {
		idx, problems := host.ValidateIndex([]byte(`{"v":1,"packId":"p","packVersion":"1","artifactVersion":"1","publishedAt":"x","tools":[` + c.tools + `],"guardrails":[],"agents":[],"flows":[]}`))
		if len(problems) > 0 {
			t.Fatalf("%s: the index itself: %v", c.what, problems)
		}
		got := strings.Join(IndexProblems(*idx), "\n")
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %q", c.what, got)
		}
	}
}
