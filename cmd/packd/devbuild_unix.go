//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup runs cmd in a process group of its own, and makes its
// cancellation stop the whole group (make and the compilers it started),
// not make alone, whose children would go on.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
}
