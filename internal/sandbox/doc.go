// Package sandbox runs WebAssembly pack modules under wazero.
//
// A Sandbox owns one wazero runtime with an optional on-disk compilation
// cache. Compile turns module bytes into a *Module once. Every Module.Call
// runs in an instance of its own: with Config.PoolSize (packd's default) an
// idle instance reset to the module's snapshot, taken after _initialize
// (every byte of memory and every mutable global), else a fresh one closed
// when the call ends; either way no state of one call is visible to the
// next. The guest sees only the host functions of the guest
// ABI (module "kindgi", see package abi) and a minimal WASI preview 1: stdout
// and stderr forwarded as whole, bounded lines; clocks; random; a sleep that
// wakes on the call's deadline or cancellation; an environment holding only the
// names the caller passes; no preopened directories and no sockets.
//
// Failures come back as typed errors (ExitError, TrapError, ABIError) or the
// sentinels ErrDeadline, ErrCancelled, ErrOutputTooLarge, ErrNoResponse and
// ErrMissingExport; a guest can never panic the host.
package sandbox
