package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/packd/host"
)

// TestFairShareSplitsTheCapBetweenCallingTenants: a tenant alone may hold
// the whole cap; once another tenant calls, each holds at most its share
// (ceil(cap / tenants)), refused with RefusalTenantShare past it; a
// tenant idle for the window no longer counts.
func TestFairShareSplitsTheCapBetweenCallingTenants(t *testing.T) {
	now := time.Unix(1000, 0)
	f := newFairShare(8, 2*time.Second)
	f.now = func() time.Time { return now }
	call := func(tenant string) (func(), error) {
		return f.admit(host.Call{Correlation: host.Correlation{TenantID: tenant}})
	}
	var a []func()
	for i := 0; i < 8; i++ {
		r, err := call("A")
		if err != nil {
			t.Fatalf("A alone, call %d: %v", i, err)
		}
		a = append(a, r)
	}
	rb, err := call("B")
	if err != nil {
		t.Fatalf("B beside A: %v", err)
	}
	for _, r := range a[:5] {
		r()
	}
	// A holds 3 of its share of 4 (8 / 2 tenants): one more, then refused
	if r, err := call("A"); err != nil {
		t.Fatalf("A under its share: %v", err)
	} else {
		a = append(a[5:], r)
	}
	var d *host.Deny
	if _, err := call("A"); !errors.As(err, &d) || d.Code != host.RefusalTenantShare {
		t.Fatalf("A at its share: %v", err)
	}
	rb()
	now = now.Add(3 * time.Second) // B has been idle for the window
	if r, err := call("A"); err != nil {
		t.Fatalf("A alone again: %v", err)
	} else {
		r()
	}
	for _, r := range a {
		r()
	}
	if len(f.tenants) > 2 {
		t.Fatalf("%d tenants kept", len(f.tenants))
	}
}

// TestATenantCannotTakeTheWholeCap: with a cap of four, tenant B calling
// and tenant A then holding every call it can in conformance.hold, B's
// next call is answered (on main A took all four slots and B got 503
// overloaded).
func TestATenantCannotTakeTheWholeCap(t *testing.T) {
	p, err := host.Load(context.Background(), host.Config{
		IndexPath: filepath.Join("..", "wasm-examples", "conformance", "index.json"),
		Sandbox:   host.SandboxConfig{CacheDir: filepath.Join(t.TempDir(), "cache")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	s, err := New(Config{Pack: p, Token: "tok", MaxConcurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(tenant, tool, input string) (int, string) {
		body := fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":%q},"input":%s,"ctx":{"tenantId":%q,"runId":"r"}}`, tool, input, tenant)
		req, _ := http.NewRequest("POST", ts.URL+"/v1/invoke", strings.NewReader(body))
		req.Header.Set("Kindgi-Pack-Token", "tok")
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, body := post("B", "conformance.echo", `{"message":"alone"}`); status != 200 {
		t.Fatalf("B alone: %d %s", status, body)
	}
	var wg sync.WaitGroup
	statuses := make(chan int, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _ := post("A", "conformance.hold", `{"release":"r","ms":1500}`)
			statuses <- status
		}()
	}
	time.Sleep(500 * time.Millisecond) // A's calls hold what they were given
	if status, body := post("B", "conformance.echo", `{"message":"beside A"}`); status != 200 || body != `{"v":2,"kind":"result","output":{"message":"beside A"}}` {
		t.Errorf("B beside A's flood: %d %s", status, body)
	}
	wg.Wait()
	close(statuses)
	held := 0
	for st := range statuses {
		if st == 200 {
			held++
		}
	}
	if held != 2 {
		t.Errorf("A held %d of the 4 slots, want its share of 2", held)
	}
}
