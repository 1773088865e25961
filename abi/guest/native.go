//go:build !wasip1

package guest

import "os"

// Log writes one line to stderr when the SDK runs outside WebAssembly.
func Log(level int32, msg string) { _, _ = os.Stderr.WriteString(msg + "\n") }

// scanValue is scan: outside WebAssembly there is no packd to ask.
func scanValue(b []byte, i int, space, escaped *bool) int { return scan(b, i, space, escaped) }

// membersIn is walkMembers: outside WebAssembly there is no packd to ask.
func membersIn(b []byte, out []member) (count, end int) { return walkMembers(b, out) }
