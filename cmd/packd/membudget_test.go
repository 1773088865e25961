package main

import (
	"errors"
	"testing"
)

func TestDefaultMemoryBudget(t *testing.T) {
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if v, ok := m[p]; ok {
				return []byte(v), nil
			}
			return nil, errors.New("no such file")
		}
	}
	meminfo := "MemTotal:       24000000 kB\nMemFree: 1 kB\n"
	cases := []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"cgroup v2 limit", map[string]string{"/sys/fs/cgroup/memory.max": "2147483648\n", "/proc/meminfo": meminfo}, 2147483648 / 4 * 3},
		{"cgroup v2 without a limit", map[string]string{"/sys/fs/cgroup/memory.max": "max\n", "/proc/meminfo": meminfo}, 24000000 * 1024 / 4 * 3},
		{"cgroup v1 limit over the machine", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712", "/proc/meminfo": meminfo}, 24000000 * 1024 / 4 * 3},
		{"nothing readable", nil, 0},
	}
	for _, c := range cases {
		if got := defaultMemoryBudget(files(c.files)); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
