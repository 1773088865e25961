// Command memtest measures packd's memory under a burst (make memtest): it
// serves the hog fixture (grows 192 MiB, touches it, holds it 1 s) with
// `packd serve` at its defaults, sends -calls concurrent calls, and samples
// the process's RSS before, during and for -after seconds after the burst.
// It fails when RSS passes the memory budget, when calls beyond the cap are
// not refused with 503 and Retry-After, or when RSS is not back within 10%
// of its idle level within 30 s.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	packd := flag.String("packd", "bin/packd", "the packd binary")
	calls := flag.Int("calls", 64, "concurrent calls in the burst")
	after := flag.Int("after", 40, "seconds to watch RSS after the burst")
	flag.Parse()
	if err := run(*packd, *calls, *after); err != nil {
		fmt.Fprintln(os.Stderr, "memtest:", err)
		os.Exit(1)
	}
}

func run(packd string, calls, after int) error {
	dir, err := os.MkdirTemp("", "packd-memtest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	index := filepath.Join(dir, "index.json")
	if err := os.WriteFile(index, []byte(`{"v":1,"packId":"mem","packVersion":"1.0.0","artifactVersion":"mem-1","publishedAt":"2026-11-30T00:00:00.000Z",
		"tools":[{"id":"hostile.hog","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"hog.wasm"}],
		"guardrails":[],"agents":[],"flows":[]}`), 0o644); err != nil {
		return err
	}
	root, _ := filepath.Abs("testdata/hostile")
	cmd := exec.Command(packd, "--index", index, "--module-root", root, "--host", "127.0.0.1", "--metrics-addr", "off", "--cache-dir", filepath.Join(dir, "cache"))
	cmd.Env = append(os.Environ(), "PORT=0", "KINDGI_PACK_SERVICE_TOKEN=memtest")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	var listening struct {
		Port            int   `json:"port"`
		MemoryBudgetMiB int64 `json:"memoryBudgetMiB"`
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"kind":"listening"`) {
			_ = json.Unmarshal(sc.Bytes(), &listening)
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if listening.Port == 0 {
		return fmt.Errorf("packd did not start")
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/invoke", listening.Port)
	body := `{"v":2,"kind":"invoke","tool":{"id":"hostile.hog"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`
	call := func() (int, string, string) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("kindgi-pack-token", "memtest")
		req.Header.Set("content-type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error(), ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header.Get("Retry-After")
	}
	pid := cmd.Process.Pid
	if s, b, _ := call(); s != 200 { // warm up: compile, first mapping
		return fmt.Errorf("warm-up call: %d %s", s, b)
	}
	time.Sleep(15 * time.Second) // the warm-up's mapping is unmapped after 10 s idle
	idle := rss(pid)

	var mu sync.Mutex
	statuses := map[string]int{}
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, b, retry := call()
			key := strconv.Itoa(s)
			switch {
			case s == 200 && b == `{"v":2,"kind":"result","output":{}}`:
				key = "200 result"
			case s == 503 && retry == "1":
				key = "503 " + strings.TrimSpace(b) + " Retry-After 1"
			default:
				key = fmt.Sprintf("%d %s", s, b)
			}
			mu.Lock()
			statuses[key]++
			mu.Unlock()
		}()
	}
	peak := idle
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(50 * time.Millisecond):
			peak = max(peak, rss(pid))
		}
	}
	burst := time.Since(start)
	back := -1.0
	for i := 1; i <= after; i++ {
		time.Sleep(time.Second)
		if r := rss(pid); back < 0 && float64(r) <= 1.1*float64(idle) {
			back = float64(i)
		}
	}
	final := rss(pid)
	fmt.Printf("memory budget %d MiB; RSS idle %d MiB, peak %d MiB during a %v burst of %d calls, %d MiB after %d s\n",
		listening.MemoryBudgetMiB, idle>>20, peak>>20, burst.Round(time.Millisecond), calls, final>>20, after)
	for k, n := range statuses {
		fmt.Printf("  %3d × %s\n", n, k)
	}
	switch {
	case listening.MemoryBudgetMiB > 0 && peak>>20 > listening.MemoryBudgetMiB:
		return fmt.Errorf("RSS %d MiB passed the budget of %d MiB", peak>>20, listening.MemoryBudgetMiB)
	case back < 0 || back > 30:
		return fmt.Errorf("RSS did not return within 10%% of idle (%d MiB) within 30 s", idle>>20)
	}
	fmt.Printf("RSS back within 10%% of idle after %v s\n", back)
	return nil
}

// rss is a process's resident set in bytes.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if f := strings.Fields(string(line)); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
