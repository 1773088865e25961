// Command deadlineload measures how deadlines hold under load: it starts
// packd serve with one pack of the conformance fixture's tools and the
// hostile loop (a guest that spins until stopped), and sends 1,000 calls
// from 4 callers (twice the cores of a 2-core machine) with deadlines from
// 20 to 300 ms: half spin, half sleep about their deadline. It prints the
// results that came after their deadline (there must be none) and how far
// past its deadline each deadline-exceeded answer came, from packd's own
// kindgi-duration-ms (make deadlineload).
//
//	deadlineload PACKD REPO
package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kindgi/packd/internal/packdproc"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: deadlineload PACKD REPO")
		os.Exit(2)
	}
	packd, repo := os.Args[1], os.Args[2]
	dir, err := os.MkdirTemp("", "deadlineload-")
	check(err)
	defer os.RemoveAll(dir)
	for from, to := range map[string]string{"wasm-examples/conformance/conformance.wasm": "conformance.wasm", "testdata/hostile/loop.wasm": "loop.wasm"} {
		b, err := os.ReadFile(filepath.Join(repo, from))
		check(err)
		check(os.WriteFile(filepath.Join(dir, to), b, 0o644))
	}
	index := `{"v":1,"packId":"deadlines","packVersion":"1.0.0","artifactVersion":"d-1","publishedAt":"2026-12-01T00:00:00.000Z","agents":[],"flows":[],"guardrails":[],"tools":[` +
		`{"id":"conformance.sleep","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"conformance.wasm"},` +
		`{"id":"hostile.loop","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"loop.wasm"}]}`
	check(os.WriteFile(filepath.Join(dir, "index.json"), []byte(index), 0o644))
	port, stop, err := packdproc.Start(packd, []string{"--index", filepath.Join(dir, "index.json")}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer stop()
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/invoke", port)

	var mu sync.Mutex
	var late, results, exceeded, other int
	var overshoot []int
	var wg sync.WaitGroup
	calls := make(chan int, 1000)
	for i := range 1000 {
		calls <- i
	}
	close(calls)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				deadline := 20 + rand.IntN(281)
				tool, input := "hostile.loop", `{}`
				if i%2 == 1 {
					tool, input = "conformance.sleep", fmt.Sprintf(`{"ms":%d}`, max(0, deadline-10+rand.IntN(21)))
				}
				body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":%q},"input":%s,"ctx":{"tenantId":"t","runId":"r"}}`, tool, input)
				req, _ := http.NewRequest("POST", url, strings.NewReader(body))
				req.Header.Set("Kindgi-Pack-Token", "tok")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Kindgi-Timeout-Ms", strconv.Itoa(deadline))
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					check(err)
				}
				b, _ := io.ReadAll(res.Body)
				_ = res.Body.Close()
				took, _ := strconv.Atoi(res.Header.Get("Kindgi-Duration-Ms"))
				mu.Lock()
				switch {
				case strings.Contains(string(b), `"kind":"result"`):
					results++
					if took > deadline {
						late++
					}
				case strings.Contains(string(b), `"code":"deadline-exceeded"`):
					exceeded++
					overshoot = append(overshoot, took-deadline)
				default:
					other++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Ints(overshoot)
	worst, p99 := 0, 0
	if n := len(overshoot); n > 0 {
		worst, p99 = overshoot[n-1], overshoot[n*99/100]
	}
	fmt.Printf("1000 calls, 4 callers, deadlines 20-300 ms: %d results (%d after their deadline), %d deadline-exceeded (overshoot p99 %d ms, worst %d ms), %d other\n",
		results, late, exceeded, p99, worst, other)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "deadlineload:", err)
		os.Exit(1)
	}
}
