package server

import (
	"context"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeIndex writes the service's index anew: artifactVersion artifact,
// the hostile tools named (name=module), and env names it requires.
func writeIndex(t *testing.T, path, artifact string, envRequired string, tools ...string) {
	t.Helper()
	var specs []string
	for _, tool := range tools {
		name, module, _ := strings.Cut(tool, "=")
		specs = append(specs, `{"id":"hostile.`+name+`","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"`+module+`"}`)
	}
	env := ""
	if envRequired != "" {
		env = `"env":{"required":["` + envRequired + `"],"optional":[]},`
	}
	body := `{"v":1,"packId":"hostile","packVersion":"1.0.0","artifactVersion":"` + artifact + `","publishedAt":"2026-11-30T00:00:00.000Z",` + env +
		`"tools":[` + strings.Join(specs, ",") + `],"guardrails":[],"agents":[],"flows":[]}`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// call posts an invoke as tenant t1 from any goroutine: its status and
// body, or the error.
func call(url, body string) (int, string, error) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("kindgi-pack-token", "tok")
	req.Header.Set("content-type", "application/json")
	req.Header.Set("kindgi-tenant-id", "t1")
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

// TestReloadClosesTheOldPackAfterItsLastCall: a reload serves the new pack
// at once, but the pack it replaces stays open while a call runs on it,
// answers that call, and is closed once the call has ended.
func TestReloadClosesTheOldPackAfterItsLastCall(t *testing.T) {
	buf := &lockedBuffer{}
	cfg := serviceConfig(t, buf)
	writeIndex(t, cfg.Service.Load.IndexPath, "hostile-1", "", "counter=counter.wasm", "slow=slow.wasm")
	svc, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Shutdown(context.Background())
	url := "http://" + svc.Addr().String() + "/v1/invoke"
	old := svc.Service().Pack()
	answered := make(chan string, 1)
	go func() {
		_, body, err := call(url, `{"v":2,"kind":"invoke","tool":{"id":"hostile.slow"},"input":{},"ctx":{"tenantId":"t1","runId":"r"}}`)
		if err != nil {
			body = err.Error()
		}
		answered <- body
	}()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(buf.text(), "slow call began"); {
		if time.Now().After(deadline) {
			t.Fatal("the slow call did not begin")
		}
		time.Sleep(10 * time.Millisecond)
	}
	writeIndex(t, cfg.Service.Load.IndexPath, "hostile-2", "", "counter=counter.wasm")
	if err := svc.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := svc.Service().Pack(); p == old || p.Index().ArtifactVersion != "hostile-2" {
		t.Fatalf("serving %s after the reload", p.Index().ArtifactVersion)
	}
	retiring := func() bool { return svc.Service().Retiring() == 1 } // old, the only pack replaced
	if !retiring() {
		t.Fatal("the old pack was closed with a call running on it")
	}
	if body := <-answered; body != `{"v":2,"kind":"result","output":{"slept":3}}` {
		t.Fatalf("the call on the old pack answered %s", body)
	}
	for deadline := time.Now().Add(10 * time.Second); retiring(); {
		if time.Now().After(deadline) {
			t.Fatal("the old pack was not closed after its last call")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The audit rows say which pack each call ran on.
	if code, _ := post(t, url, invokeMsg("hostile.counter", "t1"), "kindgi-tenant-id", "t1"); code != 200 {
		t.Fatalf("a call on the new pack: %d", code)
	}
	if err := svc.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	audit, _ := os.ReadFile(cfg.Service.AuditLog)
	rows := strings.Split(strings.TrimSpace(string(audit)), "\n")
	if len(rows) != 2 || !strings.Contains(rows[0], `"toolId":"hostile.slow"`) || !strings.Contains(rows[0], `"artifactVersion":"hostile-1"`) ||
		!strings.Contains(rows[1], `"artifactVersion":"hostile-2"`) {
		t.Fatalf("audit rows:\n%s", audit)
	}
}

// TestReloadKeepsTheServiceReady: with KINDGI_PACK_ENV_CHECK strict, a
// new index that requires an env name the process lacks would make the
// service unready, so it does not reload; with warn it does, and says
// which names are missing.
func TestReloadKeepsTheServiceReady(t *testing.T) {
	for _, strict := range []bool{true, false} {
		buf := &lockedBuffer{}
		cfg := serviceConfig(t, buf)
		cfg.Service.Calls.StrictEnv = strict
		svc, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		writeIndex(t, cfg.Service.Load.IndexPath, "hostile-2", "NOT_SET_ANYWHERE", "counter=counter.wasm")
		err = svc.Reload(context.Background())
		ready := 0
		if res, err := http.Get("http://" + svc.Addr().String() + "/readyz"); err == nil {
			ready = res.StatusCode
			res.Body.Close()
		}
		recs := kinds(buf.records(t))
		_ = svc.Shutdown(context.Background())
		switch {
		case strict && (err == nil || !strings.Contains(err.Error(), "NOT_SET_ANYWHERE") || ready != 200 || !slices.Contains(recs, "reload-failed")):
			t.Fatalf("strict: %v, /readyz %d, records %v", err, ready, recs)
		case !strict && (err != nil || ready != 200 || !slices.Contains(recs, "reloaded") || !slices.Contains(recs, "missing-env")):
			t.Fatalf("warn: %v, /readyz %d, records %v", err, ready, recs)
		}
	}
}

// TestReloadRacesCalls: reloads one after another while calls run, under
// the race detector: every call answers, and each pack replaced is closed.
func TestReloadRacesCalls(t *testing.T) {
	buf := &lockedBuffer{}
	cfg := serviceConfig(t, buf)
	svc, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Shutdown(context.Background())
	url := "http://" + svc.Addr().String() + "/v1/invoke"
	var wg sync.WaitGroup
	stop := make(chan struct{})
	failed := make(chan string, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if code, body, err := call(url, invokeMsg("hostile.counter", "t1")); code != 200 || err != nil {
					select {
					case failed <- body:
					default:
					}
					return
				}
			}
		}()
	}
	for i := range 5 {
		writeIndex(t, cfg.Service.Load.IndexPath, "hostile-"+string(rune('2'+i)), "", "counter=counter.wasm")
		if err := svc.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	select {
	case body := <-failed:
		t.Fatalf("a call failed: %s", body)
	default:
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := svc.Service().Retiring()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d replaced packs still open", n)
		}
	}
}
