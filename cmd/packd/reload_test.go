package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writeHostileIndex writes, atomically, an index of artifactVersion
// artifact whose tools hostile.<name> run <module>.wasm (name=module).
func writeHostileIndex(t *testing.T, path, artifact string, tools ...string) {
	t.Helper()
	var specs []string
	for _, tool := range tools {
		name, module, _ := strings.Cut(tool, "=")
		specs = append(specs, fmt.Sprintf(`{"id":"hostile.%s","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"%s"}`, name, module))
	}
	body := `{"v":1,"packId":"hostile-reload","packVersion":"1.0.0","artifactVersion":"` + artifact + `","publishedAt":"2026-12-02T00:00:00.000Z",` +
		`"tools":[` + strings.Join(specs, ",") + `],"guardrails":[],"agents":[],"flows":[]}`
	if err := os.WriteFile(path+".tmp", []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// TestReloadUnderLoad: SIGHUP reloads the pack in the process while
// clients call it without pause and a slow call is in flight. No call
// fails; the slow call, begun on the old pack, answers from it; every
// call after the reloaded record is answered by the new pack, and
// /v1/info says so; /readyz answers 200 throughout. Reloads of a broken
// index, of a missing module and of a module that is not one keep the
// pack serving, each in a reload-failed record naming its problem.
func TestReloadUnderLoad(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "index.json")
	writeHostileIndex(t, idx, "reload-1", "counter=counter.wasm", "slow=slow.wasm")
	s := start(t, idx, nil, "--module-root", filepath.Dir(hostileIndex))
	hc := &http.Client{Timeout: 30 * time.Second}
	// post answers a call's status, artifact version header and body.
	post := func(tool string) (int, string, string, error) {
		req, _ := http.NewRequest("POST", s.base+"/v1/invoke", strings.NewReader(invokeBody(tool, "", `{}`, `{"tenantId":"t1","runId":"r"}`)))
		for k, v := range s.auth() {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Kindgi-Artifact-Version"), string(b), err
	}
	hup := func(kinds ...string) map[string]any { t.Helper(); return s.hup(t, kinds...) }
	info := func() string {
		t.Helper()
		r := s.do(t, "GET", "/v1/info", "", s.auth())
		if r.status != 200 {
			t.Fatalf("/v1/info: %d %s", r.status, r.body)
		}
		return r.body
	}

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
		calls    atomic.Int64
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	// seen[i] is the artifact versions client i was answered by, in order
	// of change.
	seen := make([][]string, 3)
	for i := range seen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				// A breath between calls: calls stay in flight through
				// every reload without the clients taking the cores the
				// rest of the suite runs on.
				time.Sleep(time.Millisecond)
				status, version, body, err := post("hostile.counter")
				calls.Add(1)
				if err != nil || status != 200 || !strings.Contains(body, `"kind":"result"`) {
					fail("client %d: %d %s %v", i, status, body, err)
					continue
				}
				if n := len(seen[i]); n == 0 || seen[i][n-1] != version {
					seen[i] = append(seen[i], version)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			req, _ := http.NewRequest("GET", s.base+"/readyz", nil)
			resp, err := hc.Do(req)
			if err != nil {
				fail("/readyz: %v", err)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				fail("/readyz: %d", resp.StatusCode)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	type answer struct {
		status        int
		version, body string
		err           error
		at            time.Time
	}
	slow := make(chan answer, 1)
	go func() {
		status, version, body, err := post("hostile.slow")
		slow <- answer{status, version, body, err, time.Now()}
	}()
	s.stderr.waitFor(t, 30*time.Second, guestLine("stderr", "slow call began"))

	writeHostileIndex(t, idx, "reload-2", "counter=counter.wasm", "slow=slow.wasm", "sleep=sleep.wasm")
	r := hup("reloaded", "reload-failed")
	reloadedAt := time.Now()
	if r["kind"] != "reloaded" || r["artifactVersion"] != "reload-2" || r["previousArtifactVersion"] != "reload-1" || r["packId"] != "hostile-reload" {
		t.Fatalf("reload record %v", r)
	}
	if h, _ := r["indexHash"].(string); !strings.HasPrefix(h, "sha256:") {
		t.Fatalf("reloaded record's indexHash %q", h)
	}
	if got := info(); !strings.Contains(got, `"artifactVersion":"reload-2"`) || !strings.Contains(got, `"indexHash":"`+r["indexHash"].(string)+`"`) || !strings.Contains(got, `"hostile.sleep"`) {
		t.Fatalf("/v1/info after reloaded: %s", got)
	}
	if status, version, _, err := post("hostile.counter"); status != 200 || version != "reload-2" || err != nil {
		t.Fatalf("a call after reloaded: %d %q %v", status, version, err)
	}
	a := <-slow
	if a.err != nil || a.status != 200 || a.body != `{"v":2,"kind":"result","output":{"slept":3}}` || a.version != "reload-1" {
		t.Fatalf("the slow call in flight through the reload: %d %q %s %v", a.status, a.version, a.body, a.err)
	}
	if a.at.Before(reloadedAt.Add(-100 * time.Millisecond)) {
		t.Fatalf("the slow call answered before the reload had served the new pack: it was not in flight through it")
	}

	// Broken reloads: the pack served goes on, each says why.
	for _, c := range []struct {
		name, want string
		write      func()
	}{
		{"an index that is not JSON", "not valid JSON", func() {
			if err := os.WriteFile(idx, []byte(`{"v":1,`), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a missing module", "Missing module: nope.wasm", func() {
			writeHostileIndex(t, idx, "reload-3", "counter=counter.wasm", "nope=nope.wasm")
		}},
		{"a module that is not one", "index.json: compiling module: sandbox: invalid module: malformed module: not a WebAssembly binary", func() {
			writeHostileIndex(t, idx, "reload-4", "counter=counter.wasm", "bad=index.json")
		}},
	} {
		c.write()
		r := hup("reloaded", "reload-failed")
		problems := fmt.Sprint(r["problems"])
		if r["kind"] != "reload-failed" || r["artifactVersion"] != "reload-2" || !strings.Contains(problems, c.want) {
			t.Fatalf("reload of %s: %v", c.name, r)
		}
		if got := info(); !strings.Contains(got, `"artifactVersion":"reload-2"`) {
			t.Fatalf("/v1/info after the reload of %s failed: %s", c.name, got)
		}
		if status, version, _, err := post("hostile.counter"); status != 200 || version != "reload-2" || err != nil {
			t.Fatalf("a call after the reload of %s failed: %d %q %v", c.name, status, version, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d calls, failures:\n%s", calls.Load(), strings.Join(failures, "\n"))
	}
	for i, versions := range seen {
		if !slices.Equal(versions, []string{"reload-1", "reload-2"}) {
			t.Errorf("client %d was answered by %v, want reload-1 then reload-2", i, versions)
		}
	}
	metrics := scrape(t, s)
	for _, want := range []string{`packd_reloads_total{outcome="ok"} 1`, `packd_reloads_total{outcome="failed"} 3`,
		`packd_pack_info{artifact_version="reload-2",pack_id="hostile-reload",pack_version="1.0.0"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, `artifact_version="reload-1"`) {
		t.Errorf("/metrics still describes the old pack")
	}
	t.Logf("%d calls through 4 reloads", calls.Load())
}
