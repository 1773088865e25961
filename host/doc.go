// Package host makes a pack callable: it loads a pack index, compiles every
// module it names in a sandbox, checks that each module serves the ids the
// index gives it, and dispatches protocol messages through the pipeline of
// the runtime-dispatch design: parse → resolve → gate → fill defaults →
// validate input → run → validate output → answer. Every failure becomes one
// of the protocol's 14 error codes, mapped in one place (errors.go).
package host
