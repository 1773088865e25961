// Command watchbench measures what watching a service costs, side by side
// in one run: /v1/invoke of the echo pack at c=32 with nothing on, with
// --record (records appended to segments; how many calls were not
// recorded), with OpenTelemetry export of every span to a loopback OTLP
// collector that answers at once, and with head sampling of one trace in
// ten; each ratio to off beside the target of issue 43 (recording ≥ 0.95
// and none lost, tracing at 100% ≥ 0.90); and off beside a plain Go
// net/http handler that answers the same call without WASM, validation or
// anything else packd does (benchload.Plain; target ≥ 0.70). The services
// are served as packd serve serves them (metrics, log lines to the null
// device), on loopback, in this process; the load is this process's own
// keep-alive clients. A round loads the setups in turns (each for a
// quarter of -duration, one after the other, four times over), so that
// the machine's speed, which drifts over seconds on a shared VM, weighs on
// them alike; each ratio is the median of the rounds' ratios, with their
// range. `make bench` runs it.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kindgi/packd/internal/benchload"
	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/lineq"
	"github.com/kindgi/packd/internal/replay"
	"github.com/kindgi/packd/internal/server"
	"github.com/kindgi/packd/internal/service"
)

const token = "bench"

// setup is one way of serving: what it turns on.
type setup struct {
	name    string
	record  bool
	sampler string // "": no tracing
	plain   bool   // not packd: benchload.Plain
	bar     float64
}

// served is a setup running: its service, its server's URL and what
// closes them.
type served struct {
	setup
	target  benchload.Target
	records *service.ReplayRecords
	dir     string
	close   func()
}

func main() {
	index := flag.String("index", "wasm-examples/echo/index.json", "the pack index")
	duration := flag.Duration("duration", time.Second, "how long each setup is loaded in each round")
	rounds := flag.Int("rounds", 15, "rounds; each loads every setup in turn, in an order that rotates")
	turns := flag.Int("turns", 4, "how many turns a round takes: each setup is loaded for duration/turns, in turn, turns times over")
	only := flag.String("only", "", "the setups to load, comma-separated (off is always loaded: the ratios are to it); all when empty")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (each sample labelled with its setup: go tool pprof -tagfocus setup=off)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()

	var spanBytes atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		spanBytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()

	setups := []setup{
		{name: "off"},
		{name: "--record", record: true, bar: 0.95},
		{name: "otel 100%", sampler: "parentbased_always_on", bar: 0.90},
		{name: "otel 10%", sampler: "parentbased_traceidratio"},
		{name: "plain", plain: true, bar: 0.70},
	}
	var runs []*served
	for _, s := range setups {
		if *only != "" && s.name != "off" && !slices.Contains(strings.Split(*only, ","), s.name) {
			continue
		}
		r, err := serve(ctx, *index, s, collector.URL)
		if err != nil {
			fatal(fmt.Errorf("%s: %w", s.name, err))
		}
		defer r.close()
		runs = append(runs, r)
	}
	fmt.Printf("What watching costs, and packd beside a plain handler: /v1/invoke echo.message of %s at c=32, %v per setup in %d turns, %d rounds\n", *index, *duration, *turns, *rounds)
	fmt.Printf("%-12s %12s %12s\n", "setup", "req/s", "median")
	rates := map[string][]float64{}
	calls := map[string]int64{}
	turn := *duration / time.Duration(max(*turns, 1))
	for round := range *rounds {
		// Each setup is loaded in turns, the setups one after the other,
		// so that a drift of the machine's speed within the round weighs
		// on them alike; a setup's rate is its calls over its time.
		n, took := make([]int64, len(runs)), make([]time.Duration, len(runs))
		medians := make([][]time.Duration, len(runs))
		for range max(*turns, 1) {
			for i := range runs {
				k := (i + round) % len(runs)
				var rate float64
				var calls int64
				var median time.Duration
				var err error
				// The profile's samples say which setup they were taken in
				// (the clients' goroutines, and the server's, carry its
				// name: go tool pprof -tagfocus setup=off).
				pprof.Do(ctx, pprof.Labels("setup", runs[k].name), func(context.Context) {
					rate, calls, median, err = runs[k].target.Load(32, turn)
				})
				if err != nil {
					fatal(err)
				}
				elapsed := turn // a turn that answered nothing took all of it
				if calls > 0 {
					elapsed = time.Duration(float64(calls) / rate * float64(time.Second))
				}
				n[k] += calls
				took[k] += elapsed
				medians[k] = append(medians[k], median)
			}
		}
		for i := range runs {
			k := (i + round) % len(runs)
			r := runs[k]
			rate := float64(n[k]) / took[k].Seconds()
			rates[r.name] = append(rates[r.name], rate)
			calls[r.name] += n[k]
			fmt.Printf("%-12s %12.0f %12v\n", r.name, rate, benchload.Median(medians[k]).Round(time.Microsecond))
		}
	}
	// A ratio is taken in each round, between setups loaded one after the
	// other, and the median of the rounds is the figure: a shared machine's
	// speed drifts over a run, more than it does within a round.
	for _, r := range runs[1:] {
		var ratios []float64
		for i, rate := range rates[r.name] {
			x := rate / rates["off"][i]
			if r.plain { // the bar is off's against plain
				x = 1 / x
			}
			ratios = append(ratios, x)
		}
		ratio := benchload.MedianOf(ratios)
		line := fmt.Sprintf("%s ÷ off = %.2f [%.2f–%.2f]", r.name, ratio, slices.Min(ratios), slices.Max(ratios))
		if r.plain {
			line = fmt.Sprintf("off ÷ %s = %.2f [%.2f–%.2f]", r.name, ratio, slices.Min(ratios), slices.Max(ratios))
		}
		if r.bar > 0 {
			verdict := "met"
			if ratio < r.bar {
				verdict = "NOT met"
			}
			line += fmt.Sprintf("  (target ≥ %.2f: %s)", r.bar, verdict)
		}
		if r.record {
			written := r.flush(ctx)
			line += fmt.Sprintf("; records written %d of %d calls (%d lost, target 0)", written, calls[r.name]+1, calls[r.name]+1-written)
		}
		fmt.Println(line)
	}
	fmt.Printf("the collector received %d MiB of spans\n", spanBytes.Load()>>20)
}

// serve loads the pack and serves it as packd serve would with s turned on
// (or serves benchload.Plain).
func serve(ctx context.Context, index string, s setup, collector string) (*served, error) {
	if s.plain {
		ts := httptest.NewUnstartedServer(benchload.Plain(token, server.DefaultMaxBodyBytes))
		pprof.Do(ctx, pprof.Labels("setup", s.name), func(context.Context) { ts.Start() })
		r := &served{setup: s, close: ts.Close}
		r.target = invokeTarget(s.name, ts.URL)
		return r, r.target.Once()
	}
	// Metrics and log lines as packd serve has them (lines to the null
	// device, in batches).
	m, err := service.NewMetrics(prometheus.NewRegistry(), service.MetricsConfig{GoCollectors: true})
	if err != nil {
		return nil, err
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	hc := host.Config{IndexPath: index, Sandbox: host.SandboxConfig{PoolSize: service.DefaultMaxConcurrency},
		Observe: host.Observer{PoolEvent: m.PoolEvent}}
	if s.record {
		hc.Record = &host.RecordConfig{}
	}
	p, err := host.Load(ctx, hc)
	if err != nil {
		return nil, err
	}
	r := &served{setup: s}
	lines := lineq.NewBatch(null)
	cfg := service.Config{Pack: p, TenantShareOff: true, Metrics: m, Log: service.NewLog(lines)}
	if s.record {
		if r.dir, err = os.MkdirTemp("", "watchbench-records-"); err != nil {
			return nil, err
		}
		if r.records, err = service.OpenReplayRecords(r.dir, 0, nil, nil); err != nil {
			return nil, err
		}
		cfg.Records = r.records
	}
	if s.sampler != "" {
		// The exporter and the sampler read the standard variables.
		os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
		os.Setenv("OTEL_TRACES_SAMPLER", s.sampler)
		os.Setenv("OTEL_TRACES_SAMPLER_ARG", "0.1")
		t, err := service.NewTracing(ctx, "bench", nil)
		if err != nil {
			return nil, err
		}
		cfg.Tracing = t
	}
	svc, err := service.New(cfg)
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Config{Service: svc, Token: token})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go pprof.Do(ctx, pprof.Labels("setup", s.name), func(context.Context) { _ = srv.Serve(ln) })
	r.target = invokeTarget(s.name, "http://"+ln.Addr().String())
	if err := r.target.Once(); err != nil {
		return nil, err
	}
	r.close = func() {
		_ = srv.Close(ctx)
		_ = svc.Close(ctx)
		if cfg.Tracing != nil {
			_ = cfg.Tracing.Close(ctx)
		}
		if r.records != nil {
			_ = r.records.Close(ctx)
		}
		_ = p.Close(ctx)
		_ = lines.Close(ctx)
		_ = null.Close()
		if r.dir != "" {
			_ = os.RemoveAll(r.dir)
		}
	}
	return r, nil
}

// flush writes out the records still queued and counts those written.
func (r *served) flush(ctx context.Context) int64 {
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_ = r.records.Close(c)
	segments, _ := filepath.Glob(filepath.Join(r.dir, "*"+replay.SegmentExt))
	var n int64
	for _, f := range segments {
		b, err := os.ReadFile(f)
		if err != nil {
			fatal(err)
		}
		for rec := range replay.ReadSegment(bytes.NewReader(b), 32<<20) {
			if rec.Err != nil {
				fatal(fmt.Errorf("%s:%d: %w", f, rec.Line, rec.Err))
			}
			n++
		}
	}
	return n
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "watchbench:", err)
	os.Exit(1)
}

// invokeTarget is the call every setup is loaded with, at base's /v1/invoke.
func invokeTarget(name, base string) benchload.Target {
	return benchload.Target{Name: name, URL: base + "/v1/invoke",
		Body:   `{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":"hello, bench"},"ctx":{"tenantId":"t","runId":"r"}}`,
		Header: http.Header{"Kindgi-Pack-Token": {token}, "Content-Type": {"application/json"}}, Want: `"kind":"result"`}
}
