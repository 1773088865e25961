// Package server speaks Pack protocol v2 (2.7.0) over HTTP with echo: the
// routes and the order of their checks, the token, tenant pinning, the body
// limit, the concurrency cap, readiness and drain, and the JSON records a
// pack service writes on stderr. It dispatches through a loaded host.Pack.
package server
