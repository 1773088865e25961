package server

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

// BenchmarkInvoke: a pooled call of hostile.counter through the HTTP
// handler, with a traceparent and no tracing (before issue 40, the same
// call was BenchmarkInvokeTraced/off of this package).
//
//	go test -run '^$' -bench 'Invoke$' -count 3 ./server
func BenchmarkInvoke(b *testing.B) {
	p, _ := host.Load(context.Background(), host.Config{
		IndexPath: filepath.Join("..", "..", "testdata", "hostile", "index.json"),
		Sandbox:   host.SandboxConfig{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache"), PoolSize: 4},
	})
	if p == nil {
		b.Fatal("the test pack did not load")
	}
	b.Cleanup(func() { _ = p.Close(context.Background()) })
	svc, err := service.New(service.Config{Pack: p, Hooks: []service.Hook{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Close(context.Background()) })
	s, err := New(Config{Service: svc, Token: "tok"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest("POST", "/v1/invoke", strings.NewReader(`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"input":{},"ctx":{"tenantId":"t1","runId":"r"}}`))
		req.Header.Set("kindgi-pack-token", "tok")
		req.Header.Set("content-type", "application/json")
		req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
