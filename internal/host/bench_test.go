package host_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/host/internal/egress"
	"github.com/kindgi/packd/internal/sandbox"
)

// BenchmarkDispatchEcho is the whole pipeline for one call of the Go echo
// pack: parse, resolve, fill defaults, validate input, run in a fresh
// instance, validate output, encode. `make bench` runs it.
func BenchmarkDispatchEcho(b *testing.B) {
	benchDispatchEcho(b, []byte(`{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`))
}

// BenchmarkDispatchEchoLarge is BenchmarkDispatchEcho with a message of
// 64 KiB: what a call pays for the size of its input on the way in and
// out (packd says where the request's fields lie without reading it
// again: sandbox.InvokeRequest).
//
//	go test -run '^$' -bench 'DispatchEchoLarge' -count 3 ./internal/host
func BenchmarkDispatchEchoLarge(b *testing.B) {
	msg := []byte(`{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":"` + strings.Repeat("hello, bench ", 64<<10/13) + `"},"ctx":{"tenantId":"t","runId":"r"}}`)
	b.SetBytes(int64(len(msg)))
	benchDispatchEcho(b, msg)
}

// benchDispatchEcho dispatches msg to the echo example's pooled pack,
// again and again.
func benchDispatchEcho(b *testing.B, msg []byte) {
	ctx := context.Background()
	p, err := host.Load(ctx, host.Config{
		IndexPath: filepath.Join("..", "..", "wasm-examples", "echo", "index.json"),
		Sandbox:   sandbox.Config{CacheDir: cacheDir, PoolSize: 1},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	b.ReportAllocs()
	for b.Loop() {
		if o := p.Dispatch(ctx, host.Request{Body: msg}); !o.OK() {
			b.Fatalf("%.300s", o.Response)
		}
	}
}

// BenchmarkDispatchEchoRecording is what recording costs the pooled Go
// echo call, side by side in one run (make bench): off, the call as
// served; recorded, the call with its tape and record made (what the
// call's goroutine does before its answer); encoded, that and the
// record's JSON, which the record writer makes after the answer on a
// goroutine of its own (the file write is not in it).
func BenchmarkDispatchEchoRecording(b *testing.B) {
	ctx := context.Background()
	msg := []byte(`{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r","secrets":{"apiKey":"bench-secret-1"}}}`)
	for _, c := range []struct {
		name           string
		record, encode bool
	}{{"off", false, false}, {"recorded", true, false}, {"encoded", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := host.Config{IndexPath: filepath.Join("..", "..", "wasm-examples", "echo", "index.json"), Sandbox: sandbox.Config{CacheDir: cacheDir, PoolSize: 1}}
			if c.record {
				cfg.Record = &host.RecordConfig{}
			}
			p, err := host.Load(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(ctx)
			b.ReportAllocs()
			for b.Loop() {
				o := p.Dispatch(ctx, host.Request{Body: msg})
				if !o.OK() || (o.Record != nil) != c.record {
					b.Fatalf("%s (record %v)", o.Response, o.Record != nil)
				}
				if c.encode {
					if _, err := o.Record.Encode(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkEgress is what an outbound HTTP request of pack code costs next
// to a plain Go client, against one loopback server in the same run
// (`make bench`): plain-client is net/http's client; host is packd's
// egress as the host sends a request (policy, its own resolution, the
// address checks, the caps); go-pack is a call of testdata/gonet (pooled)
// that makes 8 requests with net/http through abi/guest/egress, reported
// per request (ns/request).
func BenchmarkEgress(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") }))
	defer srv.Close()
	ctx := context.Background()
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	b.Run("plain-client", func(b *testing.B) {
		c := &http.Client{Transport: &http.Transport{}}
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.Get(srv.URL + "/ping")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.ReadAll(res.Body)
			res.Body.Close()
		}
	})
	b.Run("host", func(b *testing.B) {
		c := egress.New(egress.Config{AllowAddresses: allow, MaxRequests: 1 << 30}, egress.Observer{})
		defer c.Close(context.Background())
		k := c.ForCall(egress.Policy{Kind: egress.KindAllowlist, Hosts: []string{"127.0.0.1"}}, egress.CallInfo{})
		b.ReportAllocs()
		for b.Loop() {
			if ans, _ := k.Do(ctx, &abi.HTTPRequest{URL: srv.URL + "/ping"}, nil); ans.Error != nil {
				b.Fatal(ans.Error)
			}
		}
	})
	b.Run("go-pack", func(b *testing.B) {
		dir := b.TempDir()
		schema := `"input":{"type":"object"},"output":{"type":"object"},"modulePath":"gonet.wasm"`
		index := indexJSON(`{"id":"net.fetch",`+schema+`,"network":{"kind":"allowlist","hosts":["127.0.0.1"]}},{"id":"net.offline",`+schema+`}`, "")
		if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(index), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "gonet.wasm"), gonetWasm(b), 0o644); err != nil {
			b.Fatal(err)
		}
		p, err := host.Load(ctx, host.Config{IndexPath: filepath.Join(dir, "index.json"), Sandbox: sandbox.Config{CacheDir: cacheDir, PoolSize: 1},
			Network: host.NetworkConfig{AllowAddresses: allow}})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		msg := []byte(`{"v":2,"kind":"invoke","tool":{"id":"net.fetch"},"input":{"url":"` + srv.URL + `/ping","times":` + strconv.Itoa(egressTimes) + `},"ctx":{"tenantId":"t","runId":"r"}}`)
		b.ReportAllocs()
		for b.Loop() {
			if o := p.Dispatch(ctx, host.Request{Body: msg}); !o.OK() || o.Usage.Egress.Requests != egressTimes {
				b.Fatalf("%s", o.Response)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(egressTimes*b.N), "ns/request")
	})
}

var egressTimes = 8
