// Package packdproc starts packd serve as a process of its own for the
// load programs under cmd/ (fairload, deadlineload): on a free loopback
// port, its records read until it says where it listens.
package packdproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// Start runs packd with args (on 127.0.0.1, a free port, no metrics
// listener, token "tok" and env added) and returns the port it listens
// on, and stop, which kills it. It gives up after five minutes (a cold
// start of many Go modules takes minutes on two cores).
func Start(packd string, args, env []string) (port int, stop func(), err error) {
	port, _, stop, err = StartPid(packd, args, env)
	return port, stop, err
}

// StartPid is Start, and says the process's id as well.
func StartPid(packd string, args, env []string) (port, pid int, stop func(), err error) {
	cmd := exec.Command(packd, append([]string{"--host", "127.0.0.1", "--metrics-addr", "off"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "PORT=0", "KINDGI_PACK_SERVICE_TOKEN=tok"}, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, nil, err
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	found := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var r map[string]any
			if json.Unmarshal(sc.Bytes(), &r) == nil && r["kind"] == "listening" {
				if p, ok := r["port"].(float64); ok {
					found <- int(p)
				}
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		close(found)
	}()
	select {
	case p, ok := <-found:
		if !ok {
			stop()
			return 0, 0, nil, errors.New("packd exited without listening")
		}
		return p, cmd.Process.Pid, stop, nil
	case <-time.After(5 * time.Minute):
		stop()
		return 0, 0, nil, fmt.Errorf("packd did not listen within five minutes")
	}
}
