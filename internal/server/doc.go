// Package server is packd's HTTP face: Pack protocol v2 (2.7.0) over HTTP
// with echo. It holds the listener and TLS, the routes and the order of
// their checks, the token, the tenant header of a request that is not a
// call, the body's limits in size and time, the answer's headers and
// write deadline, and the table that says each refusal code as a status,
// a body and Retry-After. Every call, and /readyz, /v1/info and a tool's
// describe, is service.Service's: this package reaches the pack only
// through it. Other faces share its listener as routes of their own
// (Config.Routes: MCP's /mcp), with their own authentication. Start runs a
// whole service (service.Start) behind it, with the /metrics listener and
// the listening log line.
package server
