package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox"
)

// fakeEgress answers every request with its URL as the body, and keeps
// what it was asked.
type fakeEgress struct {
	urls []string
}

func (f *fakeEgress) Do(_ context.Context, req *abi.HTTPRequest, body []byte) (*abi.HTTPAnswer, []byte) {
	f.urls = append(f.urls, req.URL)
	return &abi.HTTPAnswer{Status: 201, Headers: map[string][]string{"X-A": {"1"}}}, []byte("got " + req.URL)
}

// TestHTTPImportsAreSafeToMisuse: the outbound HTTP imports answer a well
// formed request through Request.Egress, refuse one when there is none,
// and stop a guest that passes ranges outside its memory or reads an
// answer it has not got, never harming the host.
func TestHTTPImportsAreSafeToMisuse(t *testing.T) {
	for _, pooled := range []bool{false, true} {
		cfg := sandbox.Config{}
		if pooled {
			cfg.PoolSize = 2
		}
		sb := newSandbox(t, cfg)
		m := compile(t, sb, hostile("httpabi"))
		if !m.ImportsHTTP() {
			t.Fatal("ImportsHTTP is false for a module that imports http_request")
		}
		run := func(body string, eg sandbox.Egress) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rep, err := m.Call(ctx, sandbox.Request{Body: []byte(body), Egress: eg})
			return string(rep.Body), err
		}
		eg := &fakeEgress{}
		out, err := run(`c{"method":"GET","url":"http://api.test/x"}`, eg)
		if err != nil || out != `{"status":201,"headers":{"X-A":["1"]},"bodyLength":21}`+"\n"+"got http://api.test/x" {
			t.Errorf("a request: %q %v", out, err)
		}
		out, err = run(`c{"url":"http://api.test/x"}`, nil)
		if err != nil || !strings.HasPrefix(out, `{"bodyLength":0,"error":{"reason":"network-not-allowed"`) {
			t.Errorf("no egress: %q %v", out, err)
		}
		out, err = run(`c{"url":5}`, eg)
		if err != nil || !strings.HasPrefix(out, `{"bodyLength":0,"error":{"reason":"bad-request"`) {
			t.Errorf("a head that is not a request: %q %v", out, err)
		}
		out, err = run(`e`, eg)
		if err != nil || !strings.HasPrefix(out, `{"bodyLength":0,"error":{"reason":"bad-request","message":"the request's method, URL and headers take more than 64 KiB"`) {
			t.Errorf("a 65 KiB head: %q %v", out, err)
		}
		for _, c := range []string{"a", "b", "d", `f{"url":"http://api.test/x"}`} {
			var abiErr *sandbox.ABIError
			if _, err := run(c, eg); !errors.As(err, &abiErr) {
				t.Errorf("case %s: %v, want an ABI error", c[:1], err)
			}
		}
		if len(eg.urls) != 2 { // c and f; d's empty head is a bad request
			t.Errorf("egress saw %v", eg.urls)
		}
	}
}

// TestCallMemoryLimit: a call's MemoryLimit stops its memory.grow at the
// limit, fresh or pooled, mapped or portable; an instance already over
// the limit does not run the call.
func TestCallMemoryLimit(t *testing.T) {
	for _, mode := range []string{"auto", "portable"} {
		for _, pool := range []int{0, 2} {
			restore := sandbox.UseReset(mode)
			sb := newSandbox(t, sandbox.Config{PoolSize: pool})
			restore()
			m := compile(t, sb, hostile("grow"))
			ctx := context.Background()
			rep, err := m.Call(ctx, sandbox.Request{Body: []byte(`{}`), CallLimits: sandbox.CallLimits{MemoryLimit: 1 << 20}})
			var trap *sandbox.TrapError
			if !errors.As(err, &trap) || rep.MemoryBytes != 1<<20 {
				t.Errorf("%s, pool %d: grown to %d bytes (%v), want the limit of 1 MiB", mode, pool, rep.MemoryBytes, err)
			}
			rep, _ = m.Call(ctx, sandbox.Request{Body: []byte(`{}`), CallLimits: sandbox.CallLimits{MemoryLimit: 4 << 20}})
			if rep.MemoryBytes != 4<<20 {
				t.Errorf("%s, pool %d: grown to %d bytes, want 4 MiB", mode, pool, rep.MemoryBytes)
			}
			if _, err := m.Call(ctx, sandbox.Request{Body: []byte(`{}`), CallLimits: sandbox.CallLimits{MemoryLimit: 32 << 10}}); !errors.Is(err, sandbox.ErrMemoryLimit) {
				t.Errorf("%s, pool %d: a limit below the module's memory: %v", mode, pool, err)
			}
		}
	}
}
