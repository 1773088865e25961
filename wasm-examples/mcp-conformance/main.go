// Command mcp-conformance is the MCP conformance fixture pack: the tools
// the MCP conformance suite (@modelcontextprotocol/conformance) calls by
// name, for the server scenarios a tools server can answer (docs/mcp.md).
// make test serves it with packd serve and runs the suite against /mcp.
package main

import (
	"encoding/json"
	"errors"

	"github.com/kindgi/packd/abi/guest"
)

var v1 = guest.Version("1.0.0")

func init() {
	guest.Tool("test_simple_text", func(json.RawMessage, *guest.Context) (any, error) {
		return map[string]string{"text": "This is a simple text response for testing."}, nil
	}, v1, guest.Description("Answers with a simple text."),
		guest.InputSchema(`{"type":"object","properties":{}}`),
		guest.OutputSchema(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	guest.Tool("test_error_handling", func(json.RawMessage, *guest.Context) (any, error) {
		return nil, errors.New("This tool intentionally returns an error for testing")
	}, v1, guest.Description("Always fails, on purpose."),
		guest.InputSchema(`{"type":"object","properties":{}}`), guest.OutputSchema(`{"type":"object"}`))
	guest.Tool("json_schema_2020_12_tool", func(in json.RawMessage, _ *guest.Context) (any, error) {
		return in, nil
	}, v1, guest.Description("Takes input described with JSON Schema 2020-12's keywords, and answers with it."),
		guest.InputSchema(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`),
		guest.OutputSchema(`{"type":"object"}`))
}

func main() {}
