//go:build !linux

package sandbox

// shareCode keeps the code where wazero mapped it: only Linux maps it from
// a file (sharedcode_linux.go).
func (m *Module) shareCode() error { return nil }
