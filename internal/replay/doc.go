// Package replay is the only package that knows the record file: a
// recorded call (Record) as its file holds it, its encoding and reading,
// the redaction of the call's secrets (Secrets), the atomic writing of a
// file (WriteFile), segments of many records (Segment, ReadSegment: a
// service's record directory), and the Replayer, which re-runs a record offline on a
// module to the same output and fuel, serving the guest the recorded host
// answers.
//
// A record holds the call's sandbox limits as the values sandbox.Request
// and sandbox.Config take (sandbox.CallLimits, sandbox.GuestLimits), so a
// new limit that changes what a guest computes is recorded and replayed
// by construction. host makes records (RecordConfig says which calls);
// service keeps them in a directory.
package replay
