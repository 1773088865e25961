// Package mcp is packd's MCP face: the pack's tools served over the Model
// Context Protocol, on the service listener's /mcp (Streamable HTTP) and
// over stdio (packd mcp), through the official Go SDK.
//
// It is a face like the HTTP one: it maps an MCP tools/call to a
// service.Request (the tool's invoke message, the caller's tenant, its
// deadline and trace context) and the service's Answer back to a
// CallToolResult, and holds no call logic: the cap, fair shares, the
// tenant pin, the gate, fuel, memory, deadlines, egress, audit lines,
// metrics, spans and records are the service's, the same for every face.
//
// What MCP adds is said here: which tools are listed (every tool the
// index does not mark internal, by its id; IndexProblems says which index
// cannot be served), what their annotations are (tools.go), how an answer
// reads to a model (answer.go), who may call and the bounds on what a
// caller sends and reads (http.go), sessions for clients of revisions
// before 2026-07-28 (face.go), and the fast path of a 2026-07-28
// tools/call, which answers as the SDK would (fast.go).
package mcp
