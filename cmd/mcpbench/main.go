// Command mcpbench measures an MCP tools/call beside a /v1/invoke call of
// the same tool on the same pack and service, side by side in one run:
// requests a second at c=1 and c=32 for each face, and the MCP face's
// ratio to /v1/invoke's (the bar of issue 41: at least 0.8 at c=32).
// The faces are served as packd serve serves them (the HTTP face with
// /mcp on its listener, on loopback); the load is this process's own
// keep-alive HTTP clients. `make bench` runs it.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/mcp"
	"github.com/kindgi/packd/internal/server"
	"github.com/kindgi/packd/internal/service"
)

const token = "bench"

func main() {
	index := flag.String("index", "wasm-examples/echo/index.json", "the pack index")
	duration := flag.Duration("duration", 3*time.Second, "how long each face is loaded at each concurrency")
	rounds := flag.Int("rounds", 2, "rounds; each loads both faces in turn, alternating which goes first")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the MCP face's load here")
	flag.Parse()
	ctx := context.Background()
	p, err := host.Load(ctx, host.Config{IndexPath: *index, Sandbox: host.SandboxConfig{PoolSize: service.DefaultMaxConcurrency}, IndexRules: mcp.IndexProblems})
	if err != nil {
		fatal(err)
	}
	defer p.Close(ctx)
	svc, err := service.New(service.Config{Pack: p, TenantShareOff: true})
	if err != nil {
		fatal(err)
	}
	defer svc.Close(ctx)
	f, err := mcp.New(mcp.Config{Service: svc, Token: token})
	if err != nil {
		fatal(err)
	}
	srv, err := server.New(server.Config{Service: svc, Token: token, Routes: []server.Route{{Path: "/mcp", Handler: f.Handler()}}})
	if err != nil {
		fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close(ctx)
	base := "http://" + ln.Addr().String()

	input := `{"message":"hello, bench"}`
	faces := []face{
		{"/v1/invoke", base + "/v1/invoke", `{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":` + input + `,"ctx":{"tenantId":"t","runId":"r"}}`,
			http.Header{"Kindgi-Pack-Token": {token}, "Content-Type": {"application/json"}}, `"kind":"result"`},
		{"mcp tools/call", base + "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo.message","arguments":` + input +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
				"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo.message"}}, `"structuredContent"`},
	}
	for _, fc := range faces {
		if err := fc.once(); err != nil {
			fatal(fmt.Errorf("%s: %w", fc.name, err))
		}
	}
	fmt.Printf("MCP tools/call beside /v1/invoke: echo.message of %s, %v per face and concurrency, %d rounds\n", *index, *duration, *rounds)
	fmt.Printf("%-16s %4s %12s %12s %14s\n", "face", "c", "req/s", "median", "heap B/call")
	for _, c := range []int{1, 32} {
		rates := map[string][]float64{}
		for r := range *rounds {
			order := faces
			if r%2 == 1 {
				order = []face{faces[1], faces[0]}
			}
			for _, fc := range order {
				if *cpuProfile != "" && fc.name == faces[1].name && c == 32 && r == 0 {
					pf, err := os.Create(*cpuProfile)
					if err != nil {
						fatal(err)
					}
					_ = pprof.StartCPUProfile(pf)
					defer pprof.StopCPUProfile()
				}
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				rate, median, err := fc.load(c, *duration)
				runtime.ReadMemStats(&m1)
				if *cpuProfile != "" && fc.name == faces[1].name && c == 32 && r == 0 {
					pprof.StopCPUProfile()
				}
				if err != nil {
					fatal(err)
				}
				rates[fc.name] = append(rates[fc.name], rate)
				calls := rate * duration.Seconds()
				fmt.Printf("%-16s %4d %12.0f %12v %14.0f\n", fc.name, c, rate, median.Round(time.Microsecond), float64(m1.TotalAlloc-m0.TotalAlloc)/calls)
			}
		}
		ratio := mean(rates[faces[1].name]) / mean(rates[faces[0].name])
		verdict := ""
		if c == 32 {
			verdict = "  (target ≥ 0.80: met)"
			if ratio < 0.8 {
				verdict = "  (target ≥ 0.80: NOT met)"
			}
		}
		fmt.Printf("c=%d: MCP req/s ÷ /v1/invoke req/s = %.2f%s\n", c, ratio, verdict)
	}
}

type face struct {
	name, url, body string
	header          http.Header
	want            string
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}, Timeout: 30 * time.Second}

func (fc face) once() error {
	req, _ := http.NewRequest("POST", fc.url, strings.NewReader(fc.body))
	req.Header = fc.header.Clone()
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(b, []byte(fc.want)) {
		return fmt.Errorf("%d %s", res.StatusCode, b)
	}
	return nil
}

// load sends calls from c clients for d, and returns the calls answered a
// second and the median time of one.
func (fc face) load(c int, d time.Duration) (float64, time.Duration, error) {
	var n atomic.Int64
	var failed atomic.Value
	var mu sync.Mutex
	var times []time.Duration
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := fc.once(); err != nil {
					failed.Store(err)
					return
				}
				mine = append(mine, time.Since(t0))
				n.Add(1)
			}
			mu.Lock()
			times = append(times, mine...)
			mu.Unlock()
		}()
	}
	begun := time.Now()
	wg.Wait()
	elapsed := time.Since(begun)
	if err, ok := failed.Load().(error); ok {
		return 0, 0, fmt.Errorf("%s at c=%d: %w", fc.name, c, err)
	}
	return float64(n.Load()) / elapsed.Seconds(), median(times), nil
}

func median(ts []time.Duration) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mcpbench:", err)
	os.Exit(1)
}
