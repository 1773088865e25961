// Command budgetload measures what a tenant's budget over time holds it
// to, and what a tenant without one gets beside it: it starts packd serve
// (the Python hostile pack: pyhostile.ok, an echo, and pyhostile.loop, a
// spin that runs to its fuel) with a policy giving tenant "metered" a
// budget of -fuel fuel a second, times tenant "free"'s sequential echo
// calls alone, then, for each of two patterns, beside "metered"'s callers
// trying to outrun its budget: many short calls (16 callers looping spins
// capped at a thirtieth of the rate) and long ones (4 callers looping
// spins capped at the rate itself), each caller retrying a refusal after
// 10 ms whatever its Retry-After. It prints, for each pattern, the fuel
// "metered" spent (the audit log's, of the calls that began in the
// window) over the budget (the rate times the window, plus the burst),
// with the target of issue 45 (within ±5%), and "free"'s p99 beside it
// over its p99 alone (target ≤ 1.5×). `make bench` runs it.
//
//	budgetload [-fuel 3e9] [-window 30s] PACKD PYHOSTILE.WASM
package main

import (
	"bufio"
	"encoding/json"
	"flag"
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
	rate := flag.Float64("fuel", 3e9, "the metered tenant's fuel a second (its burst: a second's worth)")
	window := flag.Duration("window", 30*time.Second, "how long each pattern runs")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: budgetload [-fuel N] [-window D] PACKD PYHOSTILE.WASM")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *rate, *window); err != nil {
		fmt.Fprintln(os.Stderr, "budgetload:", err)
		os.Exit(1)
	}
}

// pattern is one way the metered tenant tries to outrun its budget.
type pattern struct {
	name    string
	callers int
	maxFuel float64 // each spin's cap (the tenant's maxFuelPerCall is not used: this is the tool's own)
}

func run(packd, wasm string, rate float64, window time.Duration) error {
	dir, err := os.MkdirTemp("", "budgetload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := os.ReadFile(wasm)
	if err != nil {
		return err
	}
	patterns := []pattern{
		{"short calls", 16, rate / 30},
		{"long calls", 4, rate},
	}
	// One tool per pattern: a spin under limits.fuel, and the echo.
	tools := []string{`{"id":"pyhostile.ok","version":"1.0.0","input":{"type":"object"},"output":{},"modulePath":"hostile.wasm"}`}
	for i, p := range patterns {
		tools = append(tools, fmt.Sprintf(`{"id":"pyhostile.loop","version":"1.0.%d","input":{"type":"object"},"output":{},"modulePath":"hostile.wasm","limits":{"fuel":%.0f}}`, i+1, p.maxFuel))
	}
	index := fmt.Sprintf(`{"v":1,"packId":"pyhostile","packVersion":"1.0.0","artifactVersion":"budgetload","publishedAt":"2026-12-06T00:00:00.000Z","tools":[%s],"guardrails":[],"agents":[],"flows":[]}`, strings.Join(tools, ","))
	for name, body := range map[string][]byte{
		"hostile.wasm": b, "index.json": []byte(index),
		"policy.json": fmt.Appendf(nil, `{"tenants":{"metered":{"budget":{"fuelPerSecond":%.0f}}}}`, rate),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return err
		}
	}
	audit := filepath.Join(dir, "audit.jsonl")
	port, stop, err := packdproc.Start(packd, []string{"--index", filepath.Join(dir, "index.json"), "--policy", filepath.Join(dir, "policy.json"), "--audit-log", audit},
		[]string{"KINDGI_PACK_SERVICE_MAX_CONCURRENCY=32"})
	if err != nil {
		return err
	}
	defer stop()
	base := fmt.Sprintf("http://127.0.0.1:%d/v1/invoke", port)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}
	post := func(tenant, tool, version string) int {
		body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":%q,"version":%q},"input":{"n":1},"ctx":{"tenantId":%q,"runId":"r"}}`, tool, version, tenant)
		req, _ := http.NewRequest("POST", base, strings.NewReader(body))
		req.Header.Set("Kindgi-Pack-Token", "tok")
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// free's sequential echo calls for d: their p99.
	free := func(d time.Duration) time.Duration {
		var took []time.Duration
		for end := time.Now().Add(d); time.Now().Before(end); {
			t0 := time.Now()
			post("free", "pyhostile.ok", "1.0.0")
			took = append(took, time.Since(t0))
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		return took[len(took)*99/100]
	}
	for range 20 { // warm the pool
		post("free", "pyhostile.ok", "1.0.0")
	}
	alone := free(window / 3)
	fmt.Printf("A budget over time: tenant metered at %.3g fuel/s (burst a second's worth) tries to outrun it for %v per pattern; tenant free's sequential echo calls beside it (p99 alone %v)\n", rate, window, alone.Round(time.Microsecond))
	fmt.Printf("%-12s %8s %10s %14s %14s %8s %10s %8s\n", "pattern", "callers", "calls", "spent", "budget", "ratio", "free p99", "× alone")
	for i, p := range patterns {
		var stopping atomic.Bool
		var calls, refused atomic.Int64
		var wg sync.WaitGroup
		from := time.Now()
		for range p.callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stopping.Load() {
					switch post("metered", "pyhostile.loop", fmt.Sprintf("1.0.%d", i+1)) {
					case http.StatusServiceUnavailable:
						refused.Add(1)
						time.Sleep(10 * time.Millisecond)
					default:
						calls.Add(1)
					}
				}
			}()
		}
		beside := free(window)
		stopping.Store(true)
		to := time.Now()
		wg.Wait()
		spent, err := auditFuel(audit, "metered", from, to)
		if err != nil {
			return err
		}
		budget := rate*to.Sub(from).Seconds() + rate
		ratio := spent / budget
		verdict := "met"
		if ratio < 0.95 || ratio > 1.05 {
			verdict = "NOT met"
		}
		pverdict := "met"
		if float64(beside) > 1.5*float64(alone) {
			pverdict = "NOT met"
		}
		fmt.Printf("%-12s %8d %10d %14.4g %14.4g %8.3f %10v %8.2f  (spent within ±5%%: %s; free's p99 ≤ 1.5× alone: %s; %d refused)\n",
			p.name, p.callers, calls.Load(), spent, budget, ratio, beside.Round(time.Microsecond), float64(beside)/float64(alone), verdict, pverdict, refused.Load())
		time.Sleep(2 * time.Second) // the debt of the last calls, paid before the next pattern
	}
	return nil
}

// auditFuel sums the fuel of tenant's call lines in the audit log whose
// calls began within [from, to).
func auditFuel(path, tenant string, from, to time.Time) (float64, error) {
	time.Sleep(time.Second) // the audit log is written behind the calls
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var sum float64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Event, Target, TenantID string
			Time                    time.Time
			Fuel                    float64
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Event != "" || l.Target != "tool" || l.TenantID != tenant || l.Time.Before(from) || !l.Time.Before(to) {
			continue
		}
		sum += l.Fuel
	}
	return sum, sc.Err()
}
