package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// pool is a tiny load balancer: round robin over the backends it routes
// to, as an orchestrator's endpoints would be.
type pool struct {
	mu       sync.Mutex
	backends []*url.URL
	next     int
}

func (p *pool) set(backends ...string) {
	var us []*url.URL
	for _, b := range backends {
		u, _ := url.Parse(b)
		us = append(us, u)
	}
	p.mu.Lock()
	p.backends = us
	p.mu.Unlock()
}

func (p *pool) pick() *url.URL {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.backends[p.next%len(p.backends)]
	p.next++
	return u
}

// TestRollingRestartDropsNoCall: two replicas behind a load balancer under
// steady load (calls of 150 ms and quick ones); a third starts and joins,
// then one old replica is taken out of the balancer (Kubernetes' endpoint
// removal, which the preStop hook waits for) and sent SIGTERM with a call
// still running on it. It drains it and exits 0, and not one call fails
// (docs/deploy.md, "Rolling upgrades").
func TestRollingRestartDropsNoCall(t *testing.T) {
	env := map[string]string{tokenEnv: "rolling-token"}
	a := start(t, conformance, env)
	b := start(t, conformance, env)
	a.token = "rolling-token"
	lb := &pool{}
	lb.set(a.base, b.base)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(lb.pick())
	}})
	defer proxy.Close()

	var ok, failed atomic.Int64
	var failures sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := invokeBody("conformance.hold", "", `{"release":"rolling","ms":150}`, conformanceCtx)
			if i%2 == 1 {
				body = invokeBody("conformance.echo", "", `{"message":"m"}`, conformanceCtx)
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("POST", proxy.URL+"/v1/invoke", strings.NewReader(body))
				req.Header.Set("kindgi-pack-token", "rolling-token")
				req.Header.Set("content-type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					failures.Store(err.Error(), true)
					continue
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					failed.Add(1)
					failures.Store(res.Status+" "+string(b), true)
					continue
				}
				ok.Add(1)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	c := start(t, conformance, env) // the new version
	lb.set(a.base, b.base, c.base)
	time.Sleep(500 * time.Millisecond)
	lb.set(b.base, c.base)  // a leaves the endpoints ...
	time.Sleep(time.Second) // ... and the preStop wait lets calls routed to it arrive
	// a call still running on it when SIGTERM comes (one that came late,
	// or a long one) is drained, not cut off
	last := holdInFlight(t, a, "rolling-last", 800)
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if r := <-last; r.status != 200 {
		t.Fatalf("the call in flight at SIGTERM: %d %s", r.status, r.body)
	}
	if code := a.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("the drained replica exited %d", code)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()

	if failed.Load() != 0 {
		var why []string
		failures.Range(func(k, _ any) bool { why = append(why, k.(string)); return true })
		t.Fatalf("%d of %d calls failed: %v", failed.Load(), failed.Load()+ok.Load(), why)
	}
	if ok.Load() < 50 {
		t.Fatalf("only %d calls ran", ok.Load())
	}
	drained := false
	for _, l := range a.stderr.snapshot() {
		drained = drained || kindIs("draining")(l)
	}
	if !drained {
		t.Fatal("the replica did not drain")
	}
	t.Logf("%d calls, none failed", ok.Load())
}
