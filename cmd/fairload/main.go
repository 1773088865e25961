// Command fairload measures what one tenant's calls get beside another
// tenant's flood: it starts packd serve (the conformance pack and
// hostile.hog, a cap of 16, 1 GiB of instance memory) with --tenant-share
// on or off, times tenant B's sequential echo calls for 5 s alone, then
// for 5 s beside tenant A's 64 callers, half looping 500 ms sleeps and half
// looping hogs (192 MiB each, every page touched, held for 1 s), each
// retrying a refusal, or a hog refused its memory, after 10 ms, and prints
// B's refusals and p99 both ways (make fairload).
//
//	fairload bin/packd wasm-examples/conformance/index.json testdata/hostile/hog.wasm on|off
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kindgi/packd/internal/packdproc"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: fairload PACKD INDEX HOG.WASM on|off")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3], os.Args[4]); err != nil {
		fmt.Fprintln(os.Stderr, "fairload:", err)
		os.Exit(1)
	}
}

func run(packd, index, hog, share string) error {
	dir, err := os.MkdirTemp("", "fairload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := packWithHog(dir, index, hog); err != nil {
		return err
	}
	port, stopPackd, err := packdproc.Start(packd, []string{"--index", filepath.Join(dir, "index.json"), "--tenant-share", share},
		[]string{"KINDGI_PACK_SERVICE_MAX_CONCURRENCY=16", "PACKD_MEMORY_BUDGET_MIB=2048"})
	if err != nil {
		return err
	}
	defer stopPackd()
	base := fmt.Sprintf("http://127.0.0.1:%d/v1/invoke", port)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200}, Timeout: 30 * time.Second}
	post := func(tenant, tool, input string) (int, string) {
		body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":%q},"input":%s,"ctx":{"tenantId":%q,"runId":"r"}}`, tool, input, tenant)
		req, _ := http.NewRequest("POST", base, strings.NewReader(body))
		req.Header.Set("Kindgi-Pack-Token", "tok")
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return 0, ""
		}
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		return res.StatusCode, string(b)
	}
	measureB := func(d time.Duration) (lat []time.Duration, refused int) {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			t0 := time.Now()
			if status, _ := post("B", "conformance.echo", `{"message":"b"}`); status != 200 {
				refused++
			} else {
				lat = append(lat, time.Since(t0))
			}
		}
		return
	}
	p99 := func(l []time.Duration) time.Duration {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		if len(l) == 0 {
			return 0
		}
		return l[len(l)*99/100]
	}
	measureB(time.Second) // warm
	alone, ra := measureB(5 * time.Second)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var sleeps, hogs, starved, refused atomic.Int64
	for i := 0; i < 64; i++ {
		tool, input, done := "conformance.sleep", `{"ms":500}`, &sleeps
		if i%2 == 1 {
			tool, input, done = "hostile.hog", `{}`, &hogs
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				status, body := post("A", tool, input)
				switch {
				case status == 200 && strings.Contains(body, `"kind":"result"`):
					done.Add(1)
				case status == 200: // the hog's grow was refused: it threw
					starved.Add(1)
					time.Sleep(10 * time.Millisecond) // a refusal of its memory
				default:
					refused.Add(1)
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	beside, rb := measureB(5 * time.Second)
	stop.Store(true)
	wg.Wait()
	fmt.Printf("tenant-share %s, cap 16, 1 GiB of instance memory: B alone %d calls, %d refused, p99 %v; "+
		"B beside A's flood (32 callers of 500 ms sleeps, 32 of 192 MiB hogs) %d calls, %d refused, p99 %v (%.2fx); "+
		"A: %d sleeps and %d hogs answered, %d hogs out of memory, %d refused\n",
		share, len(alone), ra, p99(alone), len(beside), rb, p99(beside), float64(p99(beside))/float64(p99(alone)),
		sleeps.Load(), hogs.Load(), starved.Load(), refused.Load())
	return nil
}

// packWithHog writes into dir the pack of index (its modules copied beside)
// with hostile.hog added.
func packWithHog(dir, index, hog string) error {
	b, err := os.ReadFile(index)
	if err != nil {
		return err
	}
	var idx map[string]any
	if err := json.Unmarshal(b, &idx); err != nil {
		return fmt.Errorf("%s: %w", index, err)
	}
	tools, _ := idx["tools"].([]any)
	modules := map[string]bool{}
	for _, t := range tools {
		if m, ok := t.(map[string]any); ok {
			if p, ok := m["modulePath"].(string); ok {
				modules[p] = true
			}
		}
	}
	for p := range modules {
		if err := copyFile(filepath.Join(filepath.Dir(index), p), filepath.Join(dir, p)); err != nil {
			return err
		}
	}
	if err := copyFile(hog, filepath.Join(dir, "hog.wasm")); err != nil {
		return err
	}
	idx["tools"] = append(tools, map[string]any{"id": "hostile.hog", "version": "1.0.0", "input": map[string]any{"type": "object"},
		"output": map[string]any{"type": "object"}, "modulePath": "hog.wasm"})
	out, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.json"), out, 0o644)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
