// Command startbench measures start-up against the number of modules a
// pack has: for 1, 10 and 50 distinct Go modules (copies of the echo
// pack's, each with a custom section of its own, so that each compiles on
// its own), it starts packd serve with an empty compilation cache (cold),
// then again with the cache it left (warm: the median of three starts),
// and prints the time to listening and the RSS once every module has
// answered a call (what a loaded module keeps: the pages its calls run
// are resident again), each against the one-module pack, with issue 25's
// targets beside them for a Go module (make bench; it runs the Python echo
// too, whose figures have no target yet).
//
//	startbench PACKD ECHO.WASM [COUNTS]
package main

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kindgi/packd/internal/packdproc"
	"github.com/kindgi/packd/internal/wasmbin"
)

func main() {
	if len(os.Args) < 3 || len(os.Args) > 4 {
		fmt.Fprintln(os.Stderr, "usage: startbench PACKD ECHO.WASM [COUNTS, rising, e.g. 1,10,50]")
		os.Exit(2)
	}
	counts := []int{1, 10, 50}
	if len(os.Args) == 4 {
		counts = nil
		for _, f := range strings.Split(os.Args[3], ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > 1000 || (len(counts) > 0 && n <= counts[len(counts)-1]) {
				fmt.Fprintf(os.Stderr, "startbench: %q is not a module count from 1 to 1000 above the one before\n", f)
				os.Exit(2)
			}
			counts = append(counts, n)
		}
	}
	if err := run(os.Args[1], os.Args[2], counts); err != nil {
		fmt.Fprintln(os.Stderr, "startbench:", err)
		os.Exit(1)
	}
}

// warmRuns is how many warm starts each count takes the median of.
const warmRuns = 3

type start struct {
	ready time.Duration
	rss   int64 // bytes
}

func run(packd, echo string, counts []int) error {
	wasm, err := os.ReadFile(echo)
	if err != nil {
		return err
	}
	goModule := wasmbin.Custom(wasm, "go:buildid") != nil // issue 25's targets are a Go module's
	fmt.Printf("start-up against module count (distinct copies of %s; time to listening, RSS after a call to each)\n", echo)
	fmt.Printf("%-8s %12s %12s %12s %10s %12s\n", "modules", "cold", "warm", "warm/module", "RSS warm", "RSS/module")
	var firstWarm start
	var perModule time.Duration
	var rssPerModule, tenWarm = int64(-1), time.Duration(-1)
	for i, n := range counts {
		dir, err := os.MkdirTemp("", "startbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := writePack(dir, wasm, n); err != nil {
			return err
		}
		// Cold, then warm from the cache the cold start left: the median
		// of warmRuns starts (one start varies by 15% on a shared 2-core
		// VM), its RSS the median's.
		var got [2]start
		if got[0], err = startOnce(packd, dir, n); err != nil {
			return fmt.Errorf("%d modules: %w", n, err)
		}
		warm := make([]start, warmRuns)
		for j := range warm {
			if warm[j], err = startOnce(packd, dir, n); err != nil {
				return fmt.Errorf("%d modules: %w", n, err)
			}
		}
		slices.SortFunc(warm, func(a, b start) int { return cmp.Compare(a.ready, b.ready) })
		got[1] = warm[warmRuns/2]
		line := fmt.Sprintf("%-8d %12s %12s", n, got[0].ready.Round(time.Millisecond), got[1].ready.Round(time.Millisecond))
		if i == 0 {
			firstWarm = got[1]
			line += fmt.Sprintf(" %12s %9dM %12s", "", got[1].rss>>20, "")
		} else {
			extra := n - counts[0]
			perModule = (got[1].ready - firstWarm.ready) / time.Duration(extra)
			rssPerModule = (got[1].rss - firstWarm.rss) / int64(extra)
			line += fmt.Sprintf(" %12s %9dM %11.1fM", perModule.Round(time.Millisecond), got[1].rss>>20, float64(rssPerModule)/(1<<20))
		}
		if n == 10 {
			tenWarm = got[1].ready
		}
		fmt.Println(line)
	}
	if !goModule {
		return nil
	}
	verdict := func(met bool, what string) {
		mark := "ok  "
		if !met {
			mark = "MISS"
		}
		fmt.Printf("  %s %s\n", mark, what)
	}
	if len(counts) > 1 {
		verdict(perModule <= 100*time.Millisecond, "warm start <= 100 ms per additional Go module")
		verdict(rssPerModule <= 8<<20, "RSS <= 8 MiB per loaded Go module")
	}
	if tenWarm >= 0 {
		verdict(tenWarm <= 2*time.Second, "a 10-module Go pack ready warm in <= 2 s")
	}
	return nil
}

// writePack writes n distinct copies of wasm (a custom section apiece)
// and an index serving echo.echo from each, at versions 1.0.0 to 1.0.n-1.
func writePack(dir string, wasm []byte, n int) error {
	var tools []map[string]any
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("m%d.wasm", i)
		// A custom section (id 0): its size, then its name's, then the
		// name; sizes in unsigned LEB128, as encoding/binary's uvarints.
		section := append(binary.AppendUvarint(nil, uint64(len("packd-startbench"))), "packd-startbench"+strconv.Itoa(i)...)
		b := binary.AppendUvarint(append(append([]byte(nil), wasm...), 0), uint64(len(section)))
		if err := os.WriteFile(filepath.Join(dir, name), append(b, section...), 0o644); err != nil {
			return err
		}
		tools = append(tools, map[string]any{"id": "echo.echo", "version": fmt.Sprintf("1.0.%d", i),
			"input": map[string]any{"type": "object"}, "output": map[string]any{"type": "object"}, "modulePath": name})
	}
	idx, err := json.Marshal(map[string]any{"v": 1, "packId": "startbench", "packVersion": "1.0.0", "artifactVersion": "startbench-1",
		"publishedAt": "2026-12-01T00:00:00.000Z", "agents": []any{}, "flows": []any{}, "guardrails": []any{}, "tools": tools})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.json"), idx, 0o644)
}

// startOnce starts packd serve on dir's pack of n modules with the
// compilation cache under dir, and says how long it took to listen and
// its RSS once each module answered a call.
func startOnce(packd, dir string, n int) (start, error) {
	t0 := time.Now()
	port, pid, stop, err := packdproc.StartPid(packd, []string{"--index", filepath.Join(dir, "index.json"), "--cache-dir", filepath.Join(dir, "cache")}, nil)
	if err != nil {
		return start{}, err
	}
	defer stop()
	s := start{ready: time.Since(t0)}
	client := &http.Client{Timeout: time.Minute}
	for i := 0; i < n; i++ {
		body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":"echo.echo","version":"1.0.%d"},"input":{"say":"hi"},"ctx":{"tenantId":"t","runId":"r"}}`, i)
		req, err := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/v1/invoke", port), strings.NewReader(body))
		if err != nil {
			return s, err
		}
		req.Header.Set("Kindgi-Pack-Token", "tok")
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return s, err
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), `"say":"hi"`) {
			return s, fmt.Errorf("module %d answered %d: %s", i, resp.StatusCode, answer)
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			s.rss = kb << 10
		}
	}
	return s, nil
}
