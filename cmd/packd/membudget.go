package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// defaultMemoryBudget is three quarters of the memory the process may use:
// its cgroup's limit (v2, else v1) or the machine's memory, whichever is
// less; 0 when neither can be read.
func defaultMemoryBudget(readFile func(string) ([]byte, error)) int64 {
	if readFile == nil {
		readFile = os.ReadFile
	}
	var limit int64
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := readFile(p); err == nil {
			if n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && n > 0 {
				limit = n
				break
			}
		}
	}
	if b, err := readFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && (limit == 0 || kb*1024 < limit) {
					limit = kb * 1024
				}
			}
		}
	}
	return limit / 4 * 3
}
