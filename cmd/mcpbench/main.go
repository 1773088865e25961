// Command mcpbench measures an MCP tools/call beside a /v1/invoke call of
// the same tool on the same pack and service, side by side in one run:
// requests a second at c=1 and c=32 for each face, and the MCP face's
// ratio to /v1/invoke's (the bar of issue 41: at least 0.8 at c=32).
// The faces are served as packd serve serves them (the HTTP face with
// /mcp on its listener, on loopback); the load is this process's own
// keep-alive HTTP clients. `make bench` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/kindgi/packd/internal/benchload"
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
	faces := []benchload.Target{
		{Name: "/v1/invoke", URL: base + "/v1/invoke", Body: `{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":` + input + `,"ctx":{"tenantId":"t","runId":"r"}}`,
			Header: http.Header{"Kindgi-Pack-Token": {token}, "Content-Type": {"application/json"}}, Want: `"kind":"result"`},
		{Name: "mcp tools/call", URL: base + "/mcp", Body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo.message","arguments":` + input +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			Header: http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
				"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo.message"}}, Want: `"structuredContent"`},
	}
	for _, fc := range faces {
		if err := fc.Once(); err != nil {
			fatal(fmt.Errorf("%s: %w", fc.Name, err))
		}
	}
	fmt.Printf("MCP tools/call beside /v1/invoke: echo.message of %s, %v per face and concurrency, %d rounds\n", *index, *duration, *rounds)
	fmt.Printf("%-16s %4s %12s %12s %14s\n", "face", "c", "req/s", "median", "heap B/call")
	for _, c := range []int{1, 32} {
		rates := map[string][]float64{}
		for r := range *rounds {
			order := faces
			if r%2 == 1 {
				order = []benchload.Target{faces[1], faces[0]}
			}
			for _, fc := range order {
				if *cpuProfile != "" && fc.Name == faces[1].Name && c == 32 && r == 0 {
					pf, err := os.Create(*cpuProfile)
					if err != nil {
						fatal(err)
					}
					_ = pprof.StartCPUProfile(pf)
					defer pprof.StopCPUProfile()
				}
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				rate, _, median, err := fc.Load(c, *duration)
				runtime.ReadMemStats(&m1)
				if *cpuProfile != "" && fc.Name == faces[1].Name && c == 32 && r == 0 {
					pprof.StopCPUProfile()
				}
				if err != nil {
					fatal(err)
				}
				rates[fc.Name] = append(rates[fc.Name], rate)
				calls := rate * duration.Seconds()
				fmt.Printf("%-16s %4d %12.0f %12v %14.0f\n", fc.Name, c, rate, median.Round(time.Microsecond), float64(m1.TotalAlloc-m0.TotalAlloc)/calls)
			}
		}
		ratio := benchload.Mean(rates[faces[1].Name]) / benchload.Mean(rates[faces[0].Name])
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

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mcpbench:", err)
	os.Exit(1)
}
