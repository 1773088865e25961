package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kindgi/packd/internal/benchload"
	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/lineq"
	"github.com/kindgi/packd/internal/service"
)

// BenchmarkInvokeServed: /v1/invoke of the echo example through the
// handler, served as packd serve serves it (metrics, log lines to the null
// device in batches), with nothing else on, with --record, and with every
// span exported to a loopback collector: what each costs a call without
// the network (cmd/watchbench measures them with it); and "plain", the
// handler watchbench compares packd with (benchload.Plain).
//
//	go test -run '^$' -bench 'InvokeServed' -count 3 ./internal/server
func BenchmarkInvokeServed(b *testing.B) {
	for _, setup := range []string{"plain", "off", "record", "otel"} {
		b.Run(setup, func(b *testing.B) {
			h := servedEcho(b, setup)
			b.ReportAllocs()
			for b.Loop() {
				if rec := invokeEcho(h); rec.Code != 200 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkInvokeServedParallel is BenchmarkInvokeServed with 32 calls at
// a time on the machine's cores, as watchbench loads them: what the serial
// benchmark does not see, contention between calls, shows here (the log
// lines' batch grew a buffer from nothing at every round under its lock,
// about 1.5 KB a call). With record, what recording adds to a call at
// that load (watchbench's bar for it is ≥ 0.95× of off).
//
//	go test -run '^$' -bench 'InvokeServedParallel' -count 3 ./internal/server
func BenchmarkInvokeServedParallel(b *testing.B) {
	for _, setup := range []string{"plain", "off", "record"} {
		b.Run(setup, func(b *testing.B) {
			h := servedEcho(b, setup)
			b.ReportAllocs()
			b.SetParallelism(32 / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if rec := invokeEcho(h); rec.Code != 200 {
						b.Errorf("%d %s", rec.Code, rec.Body)
						return
					}
				}
			})
		})
	}
}

// invokeEcho sends the benchmarks' echo call through h, with a request
// context that can be cancelled, as net/http's is.
func invokeEcho(h http.Handler) *httptest.ResponseRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/invoke", strings.NewReader(`{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":"hello, bench"},"ctx":{"tenantId":"t","runId":"r"}}`))
	req.Header.Set("kindgi-pack-token", "tok")
	req.Header.Set("content-type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(deadlineRecorder{rec}, req)
	return rec
}

// deadlineRecorder is a recorder whose deadlines can be set, as a
// connection's can: without them, every call made an error of
// http.ErrNotSupported (about a microsecond) that no served call makes.
type deadlineRecorder struct{ *httptest.ResponseRecorder }

func (deadlineRecorder) SetReadDeadline(time.Time) error  { return nil }
func (deadlineRecorder) SetWriteDeadline(time.Time) error { return nil }

// servedEcho is the handler of a service of the echo example with setup
// on ("off", "record", "otel"), or benchload.Plain ("plain").
func servedEcho(b testing.TB, setup string) http.Handler {
	if setup == "plain" {
		return benchload.Plain("tok", DefaultMaxBodyBytes)
	}
	ctx := context.Background()
	m, err := service.NewMetrics(prometheus.NewRegistry(), service.MetricsConfig{GoCollectors: true})
	if err != nil {
		b.Fatal(err)
	}
	hc := host.Config{IndexPath: filepath.Join("..", "..", "wasm-examples", "echo", "index.json"),
		Sandbox: host.SandboxConfig{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache"), PoolSize: 4},
		Observe: host.Observer{PoolEvent: m.PoolEvent}}
	if setup == "record" {
		hc.Record = &host.RecordConfig{}
	}
	p, err := host.Load(ctx, hc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close(ctx) })
	lines := lineq.NewBatch(io.Discard)
	cfg := service.Config{Pack: p, TenantShareOff: true, Metrics: m, Log: service.NewLog(lines)}
	switch setup {
	case "record":
		r, err := service.OpenReplayRecords(b.TempDir(), 0, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = r.Close(ctx) })
		cfg.Records = r
	case "otel":
		collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/x-protobuf")
		}))
		b.Cleanup(collector.Close)
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
		b.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
		t, err := service.NewTracing(ctx, "bench", nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = t.Close(ctx) })
		cfg.Tracing = t
	}
	svc, err := service.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Close(ctx); _ = lines.Close(ctx) })
	s, err := New(Config{Service: svc, Token: "tok"})
	if err != nil {
		b.Fatal(err)
	}
	return s.Handler()
}
