package service

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kindgi/packd/internal/host"
)

// collectorFor starts what the exporter sends to, as a collector that is
// up (it answers every export), refuses (nothing listens) or hangs (it
// takes the connection and never answers), and answers its endpoint.
func collectorFor(tb testing.TB, how string) string {
	tb.Helper()
	switch how {
	case "up":
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/x-protobuf")
		}))
		tb.Cleanup(srv.Close)
		return srv.URL
	case "refuses":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr
	case "hangs":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		stop := make(chan struct{})
		go func() {
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				conns = append(conns, c) // read nothing, answer nothing
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		tb.Cleanup(func() { close(stop); ln.Close() })
		return "http://" + ln.Addr().String()
	}
	tb.Fatalf("no collector %q", how)
	return ""
}

// tracedService serves hostile.counter from a pool, with tracing to the
// collector named (how; "off": none).
func tracedService(tb testing.TB, how string) *Service {
	tb.Helper()
	p, _ := host.Load(context.Background(), host.Config{
		IndexPath: filepath.Join("..", "..", "testdata", "hostile", "index.json"),
		Sandbox:   host.SandboxConfig{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache"), PoolSize: 4},
	})
	if p == nil {
		tb.Fatal("the test pack did not load")
	}
	tb.Cleanup(func() { _ = p.Close(context.Background()) })
	cfg := Config{Pack: p, Hooks: []Hook{}}
	if how != "off" {
		tb.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collectorFor(tb, how))
		tb.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
		tr, err := NewTracing(context.Background(), "test", NewLog(io.Discard))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = tr.Close(ctx)
		})
		cfg.Tracing = tr
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// tracedCall calls hostile.counter with a traceparent, as a face would, and
// answers its status (testFace's).
func tracedCall(s *Service) int {
	a := s.Call(context.Background(), Request{
		Body: func() ([]byte, *Refusal) {
			return []byte(`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"input":{},"ctx":{"tenantId":"t1","runId":"r"}}`), nil
		},
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		Face:        testFace{},
	})
	defer a.Done()
	if a.Refusal != nil {
		return testFace{}.Status(a.Refusal.Code)
	}
	return http.StatusOK
}

// testFace answers 200, or 503 for any refusal.
type testFace struct{}

func (testFace) Name() string { return "test" }

func (testFace) Status(code string) int {
	if code == "" {
		return http.StatusOK
	}
	return http.StatusServiceUnavailable
}

// TestACollectorThatHangsHoldsNoCall: with the collector taking every
// export and never answering, more calls than the span queue holds all
// answer, every span past the queue is counted dropped (before, ~9,500 of
// 10,300 spans were lost uncounted), and closing the tracing gives up
// when told to.
func TestACollectorThatHangsHoldsNoCall(t *testing.T) {
	s := tracedService(t, "hangs")
	if err := s.cfg.Tracing.register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		for i := range 3000 { // the queue holds 2048 spans
			if code := tracedCall(s); code != 200 {
				done <- i
				return
			}
		}
		done <- -1
	}()
	select {
	case i := <-done:
		if i >= 0 {
			t.Fatalf("call %d was not answered 200", i)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("calls were held by a collector that hangs")
	}
	tr := s.cfg.Tracing
	count := func(outcome string) int64 { return int64(testutil.ToFloat64(tr.spans.WithLabelValues(outcome))) }
	if dropped, queued := count("dropped"), tr.queued.Load(); dropped < 3000-2048 || dropped+queued+count("ok")+count("failed") != 3000 {
		t.Fatalf("of 3000 spans, %d dropped, %d queued, %d ok, %d failed", dropped, queued, count("ok"), count("failed"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	_ = s.cfg.Tracing.Close(ctx)
	if d := time.Since(began); d > 10*time.Second {
		t.Fatalf("closing the tracing took %v past its context", d)
	}
}

// BenchmarkInvokeTraced: a pooled call through Service.Call with tracing
// off, and on with a collector that is up, refuses, or hangs.
//
//	go test -run '^$' -bench InvokeTraced -count 3 ./service
func BenchmarkInvokeTraced(b *testing.B) {
	for _, how := range []string{"off", "up", "refuses", "hangs"} {
		b.Run(how, func(b *testing.B) {
			s := tracedService(b, how)
			b.ResetTimer()
			for range b.N {
				if code := tracedCall(s); code != 200 {
					b.Fatalf("%d", code)
				}
			}
		})
	}
}

// TestExemplarsAreThinned: of the traced observations in a bucket, the
// first and one in every exemplarEvery carry an exemplar; each bucket
// (a value on a bound is in that bound's bucket) counts on its own.
func TestExemplarsAreThinned(t *testing.T) {
	g := newExemplarGate([]float64{1, 10})
	var took []int
	for i := range 2*exemplarEvery + 1 {
		if g.take(5) {
			took = append(took, i)
		}
	}
	if want := []int{0, exemplarEvery, 2 * exemplarEvery}; !slices.Equal(took, want) {
		t.Fatalf("took %v, want %v", took, want)
	}
	if !g.take(1) || g.take(0.5) || !g.take(100) || g.take(10.5) {
		t.Fatal("each bucket's first observation carries its exemplar")
	}
}
