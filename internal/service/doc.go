// Package service is the running pack service with no transport in it:
// every face (HTTP in package server, a command's one call) hands a call to
// Service.Call and writes the Answer it gets back.
//
// Service alone holds the concurrency cap, drain (and the cut of calls a
// drain outlasts), each tenant's fair share of the cap and of the memory
// budget, both halves of the tenant pin, the generations of the pack
// served (Reload), the hooks told of every call (the call log lines, the
// metrics, the audit log), the call's span, and where the records of
// recorded calls go. Refusals are codes (Refusal); each face says them its
// own way (Face).
//
// New makes a service of a loaded pack; Start loads the pack and opens
// what runs beside it (metrics, audit log, record directory, tracing,
// pack code output, the stderr Log), and Close releases it all.
package service
