// Command fairload measures what one tenant's calls get beside another
// tenant's flood: it starts packd serve (the conformance pack, a cap of 16)
// with --tenant-share on or off, times tenant B's sequential echo calls for
// 5 s alone, then for 5 s beside tenant A's 64 callers looping 500 ms
// sleeps, and prints B's refusals and p99 both ways (make fairload).
//
//	fairload bin/packd wasm-examples/conformance/index.json on|off
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kindgi/packd/internal/packdproc"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: fairload PACKD INDEX on|off")
		os.Exit(2)
	}
	packd, index, share := os.Args[1], os.Args[2], os.Args[3]
	port, stopPackd, err := packdproc.Start(packd, []string{"--index", index, "--tenant-share", share}, []string{"KINDGI_PACK_SERVICE_MAX_CONCURRENCY=16"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer stopPackd()
	base := fmt.Sprintf("http://127.0.0.1:%d/v1/invoke", port)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200}, Timeout: 30 * time.Second}
	post := func(tenant, tool, input string) int {
		body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":%q},"input":%s,"ctx":{"tenantId":%q,"runId":"r"}}`, tool, input, tenant)
		req, _ := http.NewRequest("POST", base, strings.NewReader(body))
		req.Header.Set("Kindgi-Pack-Token", "tok")
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode
	}
	measureB := func(d time.Duration) (lat []time.Duration, refused int) {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			t0 := time.Now()
			if post("B", "conformance.echo", `{"message":"b"}`) != 200 {
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
	var aok, a503 atomic.Int64
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if post("A", "conformance.sleep", `{"ms":500}`) == 200 {
					aok.Add(1)
				} else {
					a503.Add(1)
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	beside, rb := measureB(5 * time.Second)
	stop.Store(true)
	wg.Wait()
	fmt.Printf("tenant-share %s, cap 16: B alone %d calls, %d refused, p99 %v; B beside A's flood (64 callers of 500 ms sleeps) %d calls, %d refused, p99 %v (%.2fx); A answered %d, refused %d\n",
		share, len(alone), ra, p99(alone), len(beside), rb, p99(beside), float64(p99(beside))/float64(p99(alone)), aok.Load(), a503.Load())
}
