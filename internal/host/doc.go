// Package host makes a pack callable: it loads a pack index, compiles every
// module it names in a sandbox, checks that each module serves the ids the
// index gives it, and dispatches protocol messages through the pipeline of
// the runtime-dispatch design: parse → resolve → gate → fill defaults →
// validate input → run → validate output → answer. Every failure becomes one
// of the protocol's 14 error codes, mapped in one place (errors.go).
//
// Beside the pipeline it holds what a call's pack code may reach: the
// credentials the index binds to variables and the egress they are sent
// on (host/internal/egress), the policy gate, the memory budget and each
// call's share of it (Request.Admit), the describe envelope and the info
// document every face answers from (describe.go), and which calls are
// recorded, whose record (package replay) it fills with the call's
// secrets redacted.
package host
