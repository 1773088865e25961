// Command loadtest serves the echo example pack like `packd serve` (pooled
// instances, as many per module as the concurrency cap), plus a route
// /bench/plain in the same echo server that answers a tool call without
// WASM (token, content type, body, parse, encode): the baseline the WASM
// path is compared with. GET /bench/rss reports the process's resident
// memory after the first 10,000 and 100,000 calls of /v1/invoke.
// `make loadtest` (run.sh) drives it with wrk. For digging: -cpuprofile,
// -heapprofile and -trace write their files when the process gets SIGTERM,
// and GET /bench/pool counts the pool's events and the pages its resets
// copied back.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kindgi/packd/internal/benchload"
	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/lineq"
	"github.com/kindgi/packd/internal/sandbox"
	"github.com/kindgi/packd/internal/server"
	"github.com/kindgi/packd/internal/service"
)

func main() {
	index := flag.String("index", "wasm-examples/echo/index.json", "the pack index")
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	token := flag.String("token", "bench", "pack token")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile here until SIGTERM")
	heapProfile := flag.String("heapprofile", "", "write a heap profile here on SIGTERM")
	traceOut := flag.String("trace", "", "write an execution trace here until SIGTERM")
	pool := flag.Int("pool-size", service.DefaultMaxConcurrency, "instances of each module kept between calls (0: a fresh instance per call)")
	flag.Parse()
	ctx := context.Background()
	if *cpuProfile != "" || *heapProfile != "" || *traceOut != "" {
		var cpu, tr *os.File
		if *traceOut != "" {
			tr = create(*traceOut)
			_ = trace.Start(tr)
		}
		if *cpuProfile != "" {
			cpu = create(*cpuProfile)
			_ = pprof.StartCPUProfile(cpu)
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		go func() {
			<-sig
			if tr != nil {
				trace.Stop()
				_ = tr.Close()
			}
			if cpu != nil {
				pprof.StopCPUProfile()
				_ = cpu.Close()
			}
			if *heapProfile != "" {
				if f, err := os.Create(*heapProfile); err == nil {
					runtime.GC()
					_ = pprof.WriteHeapProfile(f)
					_ = f.Close()
				}
			}
			os.Exit(0)
		}()
	}
	// The pool reports to packd's metrics, as under `packd serve`, so that
	// /v1/invoke here pays what it pays there; /bench/pool reads them back.
	reg := prometheus.NewRegistry()
	m, err := service.NewMetrics(reg, service.MetricsConfig{GoCollectors: true})
	if err != nil {
		fail(err)
	}
	pack, err := host.Load(ctx, host.Config{IndexPath: *index, Sandbox: sandbox.Config{CacheDir: os.TempDir() + "/packd-test-wazero-cache", PoolSize: *pool},
		Observe: host.Observer{PoolEvent: m.PoolEvent}})
	if err != nil {
		fail(err)
	}
	// Log lines go to stderr in batches, as packd serve writes them.
	svc, err := service.New(service.Config{Pack: pack, Metrics: m, Log: service.NewLog(lineq.NewBatch(os.Stderr))})
	if err != nil {
		fail(err)
	}
	srv, err := server.New(server.Config{Service: svc, Token: *token})
	if err != nil {
		fail(err)
	}
	srv.Echo().POST("/bench/plain", echo.WrapHandler(benchload.Plain(*token, server.DefaultMaxBodyBytes)))
	// RSS after the 10,000th and the 100,000th call of /v1/invoke.
	var calls atomic.Int64
	var rss [2]atomic.Int64
	// Time in the server per path (handler in, answer out), beside wrk's
	// times, which on a small machine include wrk waiting for its CPU.
	lat := map[string]*histogram{"/v1/invoke": {}, "/bench/plain": {}}
	srv.Echo().Pre(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if h := lat[c.Request().URL.Path]; h != nil {
				h.add(time.Since(start))
			}
			if c.Request().URL.Path == "/v1/invoke" {
				switch calls.Add(1) {
				case 10_000:
					rss[0].Store(residentBytes())
				case 100_000:
					rss[1].Store(residentBytes())
				}
			}
			return err
		}
	})
	srv.Echo().GET("/bench/latency", func(c echo.Context) error { // and starts anew
		out := map[string][2]float64{}
		for path, h := range lat {
			out[path] = [2]float64{h.quantile(.5), h.quantile(.99)}
			h.reset()
		}
		return c.JSON(http.StatusOK, out)
	})
	srv.Echo().GET("/bench/pool", func(c echo.Context) error {
		out, err := poolCounts(reg)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, out)
	})
	srv.Echo().GET("/bench/rss", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]int64{"calls": calls.Load(), "rssAfter10k": rss[0].Load(), "rssAfter100k": rss[1].Load()})
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fail(err)
	}
	fmt.Fprintln(os.Stderr, "listening on", ln.Addr())
	_ = srv.Serve(ln)
}

// fail says err and exits.
func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// create creates a file for a profile or trace, or fails.
func create(path string) *os.File {
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	return f
}

// residentBytes is the process's resident set (Linux; 0 elsewhere).
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// histogram counts durations in 10 µs buckets up to a second.
type histogram struct{ n [100_000]atomic.Int64 }

func (h *histogram) add(d time.Duration) { h.n[min(int(d/(10*time.Microsecond)), len(h.n)-1)].Add(1) }

// quantile is the q quantile in milliseconds (the bucket's upper bound).
func (h *histogram) quantile(q float64) float64 {
	var total int64
	for i := range h.n {
		total += h.n[i].Load()
	}
	var seen int64
	for i := range h.n {
		if seen += h.n[i].Load(); total > 0 && float64(seen) >= q*float64(total) {
			return float64(i+1) / 100
		}
	}
	return 0
}

func (h *histogram) reset() {
	for i := range h.n {
		h.n[i].Store(0)
	}
}

// poolCounts is packd_pool_events_total by event and reason, and the pages
// the resets copied back (the sum of packd_pool_reset_pages).
func poolCounts(reg *prometheus.Registry) (map[string]float64, error) {
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range families {
		switch f.GetName() {
		case "packd_pool_events_total":
			for _, m := range f.GetMetric() {
				key := ""
				for _, l := range m.GetLabel() {
					key += "/" + l.GetValue()
				}
				out[key[1:]] = m.GetCounter().GetValue()
			}
		case "packd_pool_reset_pages":
			for _, m := range f.GetMetric() {
				out["reset pages"] = float64(m.GetHistogram().GetSampleSum())
			}
		}
	}
	return out, nil
}
