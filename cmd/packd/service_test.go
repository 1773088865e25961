package main

// The black-box conformance suite: packd is built, started as a process
// against the conformance fixture pack with a random token and PORT=0, and
// driven over real HTTP on loopback, as the existing services' suite does.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestServiceRoutesAndOrderOfChecks(t *testing.T) {
	s := start(t, conformance, nil)
	none := map[string]string{}
	bad := map[string]string{"kindgi-pack-token": "wrong", "content-type": "application/json"}
	expect(t, s.do(t, "GET", "/nope?x=1", "", none), 404, `{"error":"No route /nope"}`)
	expect(t, s.do(t, "GET", "/v1/invoke", "", none), 405, `{"error":"Use POST"}`)
	expect(t, s.do(t, "GET", "/v1/invoke", "", s.auth()), 405, `{"error":"Use POST"}`)
	expect(t, s.do(t, "POST", "/v1/info", "", none), 405, `{"error":"Use GET"}`)
	expect(t, s.do(t, "POST", "/healthz", "", none), 405, `{"error":"Use GET"}`)
	expect(t, s.do(t, "POST", "/v1/invoke", "{}", none), 401, `{"error":"Bad pack token"}`)
	expect(t, s.do(t, "POST", "/v1/invoke", "{}", bad), 401, `{"error":"Bad pack token"}`)
	expect(t, s.do(t, "GET", "/v1/info", "", bad), 401, `{"error":"Bad pack token"}`)
	expect(t, s.do(t, "GET", "/healthz?probe=1", "", none), 200, `{"status":"ok"}`)
	expect(t, s.do(t, "GET", "/readyz", "", none), 200, `{"status":"ready"}`)
	expect(t, s.do(t, "POST", "/v1/invoke", "{}", map[string]string{"kindgi-pack-token": s.token, "content-type": "text/plain"}),
		415, `{"error":"Content-Type must be application/json"}`)
	expect(t, s.invoke(t, "not json"), 200, `{"v":2,"kind":"error","code":"malformed-message","message":"Request body is not valid JSON"}`)

	info := s.do(t, "GET", "/v1/info", "", s.auth())
	idx, _ := os.ReadFile(conformance)
	sum := sha256.Sum256(idx)
	if info.status != 200 || !strings.HasPrefix(info.body, `{"protocol":2,"packId":"conformance","packVersion":"1.0.0","artifactVersion":"conformance-1.0.0","indexHash":"sha256:`+hex.EncodeToString(sum[:])+`","tools":[{"id":"conformance.bad-output","version":"1.0.0"},`) ||
		!strings.HasSuffix(info.body, `"checks":["conformance.checks.throws","conformance.checks.min-length"],"missingEnv":[]}`) {
		t.Fatalf("info: %d %s", info.status, info.body)
	}

	r := s.invoke(t, invokeBody("conformance.echo", "", `{"message":"hi"}`, conformanceCtx))
	if r.header.Get("kindgi-artifact-version") != "conformance-1.0.0" || !digits(r.header.Get("kindgi-duration-ms")) {
		t.Errorf("invoke headers: %v", r.header)
	}
	r = s.invoke(t, "[]")
	if r.header.Get("kindgi-artifact-version") == "" || r.header.Get("kindgi-duration-ms") == "" {
		t.Errorf("an error answer lacks the invoke headers: %v", r.header)
	}
}

func TestServiceBodyLimit(t *testing.T) {
	s := start(t, conformance, nil)
	addr := strings.TrimPrefix(s.base, "http://")

	// Refused on Content-Length alone, before any body byte is sent.
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "POST /v1/invoke HTTP/1.1\r\nHost: x\r\nkindgi-pack-token: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", s.token, 10*1024*1024+1)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || string(b) != `{"error":"Request body too large"}` {
		t.Fatalf("content-length: %d %s", resp.StatusCode, b)
	}

	// A chunked body over the limit.
	big := io.MultiReader(strings.NewReader(`{"v":2,"pad":"`), bytes.NewReader(bytes.Repeat([]byte("x"), 10*1024*1024)), strings.NewReader(`"}`))
	req, _ := http.NewRequest("POST", s.base+"/v1/invoke", big)
	req.Header.Set("kindgi-pack-token", s.token)
	req.Header.Set("content-type", "application/json")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || string(b) != `{"error":"Request body too large"}` {
		t.Fatalf("chunked: %d %s", resp.StatusCode, b)
	}

	// Exactly at the limit is read and dispatched.
	pad := 10*1024*1024 - len(`{"v":2,"kind":"bogus","pad":""}`)
	r := s.invoke(t, `{"v":2,"kind":"bogus","pad":"`+strings.Repeat("x", pad)+`"}`)
	expect(t, r, 200, `{"v":2,"kind":"error","code":"unexpected-message-kind","message":"Unknown request kind \"bogus\""}`)

	// An oversized header block is refused, and the service lives on.
	req, _ = http.NewRequest("GET", s.base+"/healthz", nil)
	req.Header.Set("x-big", strings.Repeat("h", 100<<10))
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 431 {
			t.Errorf("100 KiB of headers: %d", resp.StatusCode)
		}
	}
	expect(t, s.do(t, "GET", "/healthz", "", nil), 200, `{"status":"ok"}`)
}

// TestServiceConformancePack runs every case of PROTOCOL-NOTES §8 over
// HTTP, with a fresh instance for every call.
func TestServiceConformancePack(t *testing.T) {
	s := start(t, conformance, map[string]string{"CONFORMANCE_VISIBLE": "1", "UNDECLARED_SECRET": "x"}, "--pool-size", "0")
	conformanceOverHTTP(t, s)
}

// TestServiceConformancePackC: the same suite against the fixture pack
// written in C with sdk/c/kindgi.h, fresh and pooled.
func TestServiceConformancePackC(t *testing.T) {
	for _, pool := range []string{"0", "auto"} {
		t.Run("pool-size "+pool, func(t *testing.T) {
			s := start(t, cConformance, map[string]string{"CONFORMANCE_VISIBLE": "1", "UNDECLARED_SECRET": "x"}, "--pool-size", pool)
			conformanceOverHTTP(t, s)
		})
	}
}

// TestServiceConformancePackPooled: the same answers from pooled
// instances, which the service uses by default (as many per module as
// its concurrency cap).
func TestServiceConformancePackPooled(t *testing.T) {
	s := start(t, conformance, map[string]string{"CONFORMANCE_VISIBLE": "1", "UNDECLARED_SECRET": "x", "KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "7"})
	rec := record(t, s.stderr.waitFor(t, time.Second, kindIs("listening")))
	if rec["poolSize"] != float64(7) {
		t.Fatalf("listening record: %v", rec)
	}
	for i := 0; i < 3; i++ { // instances are reused across the rounds
		conformanceOverHTTP(t, s)
	}
}

func conformanceOverHTTP(t *testing.T, s *served) {
	for _, c := range toolCases {
		t.Run(c.name, func(t *testing.T) {
			var extra []string
			if c.timeoutMs > 0 {
				extra = []string{"kindgi-timeout-ms", strconv.Itoa(c.timeoutMs)}
			}
			expect(t, s.invoke(t, invokeBody(c.id, c.version, c.input, conformanceCtx), extra...), 200, c.want)
		})
	}
	for _, c := range checkCases {
		t.Run(c.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"v":2,"kind":"check-invoke","check":{"id":%q},"config":%s,"trace":%s}`, c.id, c.config, c.trace)
			expect(t, s.invoke(t, body), 200, c.want)
		})
	}
	t.Run("full context comes back equal", func(t *testing.T) {
		r := s.invoke(t, invokeBody("conformance.context", "", `{}`, fullCtx))
		var got struct{ Output map[string]any }
		var want map[string]any
		_ = json.Unmarshal([]byte(r.body), &got)
		_ = json.Unmarshal([]byte(fullCtx), &want)
		if r.status != 200 || !reflect.DeepEqual(got.Output, want) {
			t.Fatalf("got %s", r.body)
		}
	})
	t.Run("an invalid timeout header means the default", func(t *testing.T) {
		expect(t, s.invoke(t, invokeBody("conformance.sleep", "", `{"ms":5}`, conformanceCtx), "kindgi-timeout-ms", "12abc"),
			200, `{"v":2,"kind":"result","output":{"slept":5}}`)
	})
	t.Run("guest output goes into records of its own", func(t *testing.T) {
		r := s.invoke(t, invokeBody("conformance.noisy", "", `{}`, conformanceCtx))
		expect(t, r, 200, `{"v":2,"kind":"result","output":{"ok":true}}`)
		for _, line := range []string{"noisy: a line on stdout", `{"v":2,"kind":"result","output":{"ok":false}}`} {
			rec := record(t, s.stderr.waitFor(t, 10*time.Second, guestLine("stdout", line)))
			if rec["toolId"] != "conformance.noisy" || rec["tenantId"] != "t-conformance" || rec["level"] != "info" {
				t.Errorf("record %v", rec)
			}
		}
		rec := record(t, s.stderr.waitFor(t, 10*time.Second, guestLine("stderr", "noisy: a line on stderr")))
		if rec["toolId"] != "conformance.noisy" || rec["level"] != "warn" {
			t.Errorf("record %v", rec)
		}
		for _, l := range s.stdout.snapshot() {
			t.Errorf("a line on stdout: %s", l)
		}
	})
	t.Run("call records", func(t *testing.T) {
		ctx := `{"tenantId":"t-rec","runId":"run-rec","projectId":"p-rec","orgId":"o-rec","requestId":"req-rec","secrets":{"apiKey":"TOPSECRETVALUE"},"env":{"REGION":"ENVVALUE"}}`
		s.invoke(t, invokeBody("conformance.echo", "", `{"message":"m"}`, ctx),
			"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		line := s.stderr.waitFor(t, 10*time.Second, func(l string) bool { return strings.Contains(l, `"tenantId":"t-rec"`) })
		rec := record(t, line)
		keys := recordKeys(t, line)
		wantKeys := []string{"time", "level", "severity", "subsystem", "message", "traceId", "spanId", "tenantId", "projectId", "orgId", "runId", "requestId", "toolId"}
		if strings.Join(keys[:len(wantKeys)], ",") != strings.Join(wantKeys, ",") {
			t.Errorf("record keys %v", keys)
		}
		if rec["traceId"] != "4bf92f3577b34da6a3ce929d0e0e4736" || len(rec["spanId"].(string)) != 16 || rec["spanId"] == "00f067aa0ba902b7" ||
			rec["outcome"] != "ok" || rec["target"] != "tool" || rec["id"] != "conformance.echo" || rec["level"] != "info" ||
			rec["severity"] != "INFO" || rec["event"] != "call" || rec["kind"] != "call" || rec["subsystem"] != "pack" {
			t.Errorf("record %v", rec)
		}
		if fuel, ok := rec["fuel"].(float64); !ok || fuel <= 0 {
			t.Errorf("no fuel on the call record: %v", rec["fuel"])
		}
		if !strings.HasPrefix(rec["message"].(string), "tool conformance.echo ok ") {
			t.Errorf("message %q", rec["message"])
		}
		s.invoke(t, invokeBody("conformance.throws", "", `{}`, `{"tenantId":"t-rec2","runId":"r"}`))
		rec = record(t, s.stderr.waitFor(t, 10*time.Second, func(l string) bool { return strings.Contains(l, `"tenantId":"t-rec2"`) }))
		if rec["level"] != "warn" || rec["severity"] != "WARNING" || rec["outcome"] != "handler-throw" {
			t.Errorf("failed call record %v", rec)
		}
		s.invoke(t, `{"v":2,"kind":"invoke","tool":{"id":"unparsed-call"}}`)
		for _, l := range append(s.stderr.snapshot(), s.stdout.snapshot()...) {
			for _, secret := range []string{"TOPSECRETVALUE", "ENVVALUE", s.token} {
				if strings.Contains(l, secret) {
					t.Errorf("a secret reached the logs: %s", l)
				}
			}
			if strings.Contains(l, "unparsed-call") {
				t.Errorf("a message that did not parse got a record: %s", l)
			}
		}
	})
}

// recordKeys lists a record's keys in order.
func recordKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	var keys []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		_ = dec.Decode(&skip)
	}
	return keys
}

// holdInFlight starts a conformance.hold call and waits until the guest
// prints its hold line, so the call is provably running.
func holdInFlight(t *testing.T, s *served, release string, ms int) <-chan reply {
	t.Helper()
	done := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.base+"/v1/invoke", strings.NewReader(invokeBody("conformance.hold", "", fmt.Sprintf(`{"release":%q,"ms":%d}`, release, ms), conformanceCtx)))
		for k, v := range s.auth() {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			done <- reply{status: -1, body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- reply{resp.StatusCode, resp.Header, string(b)}
	}()
	s.stderr.waitFor(t, 30*time.Second, guestLine("stdout", "hold: "+release))
	return done
}

func TestServiceDrainsInFlightCallsOnSIGTERM(t *testing.T) {
	s := start(t, conformance, nil)
	held := holdInFlight(t, s, "drain", 4000)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.stderr.waitFor(t, 10*time.Second, kindIs("draining"))
	r := s.do(t, "GET", "/readyz", "", nil)
	expect(t, r, 503, `{"error":"draining"}`)
	if r.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
	}
	expect(t, s.invoke(t, invokeBody("conformance.echo", "", `{"message":"late"}`, conformanceCtx)), 503, `{"error":"draining"}`)
	expect(t, <-held, 200, `{"v":2,"kind":"result","output":{"released":true}}`)
	if code := s.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	s.stderr.waitFor(t, 5*time.Second, kindIs("stopped"))
}

func TestServiceConcurrencyCap(t *testing.T) {
	s := start(t, conformance, map[string]string{"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "1"})
	held := holdInFlight(t, s, "cap", 4000)
	r := s.invoke(t, invokeBody("conformance.echo", "", `{"message":"second"}`, conformanceCtx))
	expect(t, r, 503, `{"error":"overloaded"}`)
	if r.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
	}
	expect(t, s.do(t, "GET", "/readyz", "", nil), 200, `{"status":"ready"}`) // the cap is not readiness
	expect(t, <-held, 200, `{"v":2,"kind":"result","output":{"released":true}}`)
	expect(t, s.invoke(t, invokeBody("conformance.echo", "", `{"message":"after"}`, conformanceCtx)), 200,
		`{"v":2,"kind":"result","output":{"message":"after"}}`)
}

func TestServiceCancelsTheGuestWhenTheCallerLeaves(t *testing.T) {
	s := start(t, conformance, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	body := invokeBody("conformance.hold", "", `{"release":"leave","ms":60000}`, `{"tenantId":"t-leave","runId":"r"}`)
	fmt.Fprintf(conn, "POST /v1/invoke HTTP/1.1\r\nHost: x\r\nkindgi-pack-token: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", s.token, len(body), body)
	s.stderr.waitFor(t, 30*time.Second, guestLine("stdout", "hold: leave"))
	start := time.Now()
	conn.Close()
	rec := record(t, s.stderr.waitFor(t, 20*time.Second, func(l string) bool { return kindIs("call")(l) && strings.Contains(l, `"tenantId":"t-leave"`) }))
	if rec["outcome"] != "cancelled" || rec["message"] != fmt.Sprintf("tool conformance.hold cancelled %vms", rec["durationMs"]) {
		t.Fatalf("record %v", rec)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("the guest went on for %v after the caller left", time.Since(start))
	}
}

// requiredEnvIndex is the conformance index with a required env name.
func requiredEnvIndex(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(conformance)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"required": []`)) {
		t.Fatal("the conformance index has no empty env.required")
	}
	b = bytes.Replace(b, []byte(`"required": []`), []byte(`"required": ["CONFORMANCE_REQUIRED"]`), 1)
	p := filepath.Join(t.TempDir(), "index.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServiceEnvCheck(t *testing.T) {
	idx := requiredEnvIndex(t)
	root := filepath.Dir(conformance)
	missing := `{"error":"missing env","missingEnv":["CONFORMANCE_REQUIRED"]}`
	t.Run("strict", func(t *testing.T) {
		s := start(t, idx, map[string]string{"CONFORMANCE_REQUIRED": ""}, "--module-root", root)
		rec := record(t, s.stderr.waitFor(t, 5*time.Second, kindIs("missing-env")))
		if rec["check"] != "strict" || rec["level"] != "warn" || fmt.Sprint(rec["names"]) != "[CONFORMANCE_REQUIRED]" {
			t.Errorf("record %v", rec)
		}
		r := s.do(t, "GET", "/readyz", "", nil)
		expect(t, r, 503, missing)
		if r.header.Get("Retry-After") != "1" {
			t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
		}
		expect(t, s.invoke(t, invokeBody("conformance.echo", "", `{"message":"m"}`, conformanceCtx)), 503, missing)
		expect(t, s.do(t, "GET", "/healthz", "", nil), 200, `{"status":"ok"}`)
		if r := s.do(t, "GET", "/v1/info", "", s.auth()); r.status != 200 || !strings.HasSuffix(r.body, `"missingEnv":["CONFORMANCE_REQUIRED"]}`) {
			t.Errorf("info %d %s", r.status, r.body)
		}
		count := 0
		for _, l := range s.stderr.snapshot() {
			if kindIs("missing-env")(l) {
				count++
			}
		}
		if count != 1 {
			t.Errorf("%d missing-env records", count)
		}
	})
	t.Run("warn", func(t *testing.T) {
		s := start(t, idx, map[string]string{"KINDGI_PACK_ENV_CHECK": "warn"}, "--module-root", root)
		if rec := record(t, s.stderr.waitFor(t, 5*time.Second, kindIs("missing-env"))); rec["check"] != "warn" {
			t.Errorf("record %v", rec)
		}
		expect(t, s.do(t, "GET", "/readyz", "", nil), 200, `{"status":"ready"}`)
		expect(t, s.invoke(t, invokeBody("conformance.echo", "", `{"message":"m"}`, conformanceCtx)), 200, `{"v":2,"kind":"result","output":{"message":"m"}}`)
	})
	t.Run("set, even to a space", func(t *testing.T) {
		s := start(t, idx, map[string]string{"CONFORMANCE_REQUIRED": " "}, "--module-root", root)
		expect(t, s.do(t, "GET", "/readyz", "", nil), 200, `{"status":"ready"}`)
		for _, l := range s.stderr.snapshot() {
			if kindIs("missing-env")(l) {
				t.Errorf("unexpected %s", l)
			}
		}
	})
}

func TestServiceTenantPinning(t *testing.T) {
	s := start(t, conformance, map[string]string{"KINDGI_PACK_TENANT_ID": "t-conformance"})
	body := invokeBody("conformance.echo", "", `{"message":"m"}`, conformanceCtx)
	mismatch := func(r reply) {
		t.Helper()
		var m map[string]any
		_ = json.Unmarshal([]byte(r.body), &m)
		if r.status != 421 || m["code"] != "pack-tenant-mismatch" || m["error"] == "" || len(m) != 2 {
			t.Fatalf("got %d %s", r.status, r.body)
		}
	}
	mismatch(s.invoke(t, body))
	mismatch(s.invoke(t, body, "kindgi-tenant-id", "t-other"))
	mismatch(s.invoke(t, invokeBody("conformance.echo", "", `{"message":"m"}`, `{"tenantId":"t-other","runId":"r"}`), "kindgi-tenant-id", "t-conformance"))
	mismatch(s.do(t, "GET", "/v1/info", "", s.auth()))
	expect(t, s.invoke(t, body, "kindgi-tenant-id", "t-conformance"), 200, `{"v":2,"kind":"result","output":{"message":"m"}}`)
	if r := s.do(t, "GET", "/v1/info", "", s.auth("kindgi-tenant-id", "t-conformance")); r.status != 200 {
		t.Fatalf("info %d %s", r.status, r.body)
	}
	expect(t, s.invoke(t, `{"v":2,"kind":"check-invoke","check":{"id":"conformance.checks.min-length"},"config":{},"trace":{"output":"ok"}}`, "kindgi-tenant-id", "t-conformance"),
		200, `{"v":2,"kind":"check-result","result":{"passed":true}}`)
	// Token before tenant: a bad token is 401 whatever the tenant.
	expect(t, s.do(t, "POST", "/v1/invoke", body, map[string]string{"kindgi-pack-token": "x", "content-type": "application/json"}), 401, `{"error":"Bad pack token"}`)
}

func TestServiceProcessContractFailures(t *testing.T) {
	t.Run("config-invalid lists every problem", func(t *testing.T) {
		s := launch(t, conformance, map[string]string{tokenEnv: "has space", "PORT": "70000",
			"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "0", "KINDGI_PACK_ENV_CHECK": "loose", "PACKD_POOL_SIZE": "lots"}, "--host", "")
		if code := s.wait(t, 30*time.Second); code != 1 {
			t.Fatalf("exit %d", code)
		}
		rec := record(t, s.stderr.waitFor(t, time.Second, kindIs("config-invalid")))
		if rec["level"] != "error" || len(rec["problems"].([]any)) != 6 {
			t.Fatalf("record %v", rec)
		}
	})
	t.Run("empty token", func(t *testing.T) {
		s := launch(t, conformance, map[string]string{tokenEnv: "  \n"})
		if code := s.wait(t, 30*time.Second); code != 1 {
			t.Fatalf("exit %d", code)
		}
		s.stderr.waitFor(t, time.Second, func(l string) bool {
			return kindIs("config-invalid")(l) && strings.Contains(l, "KINDGI_PACK_SERVICE_TOKEN is required")
		})
	})
	t.Run("a bad policy is a bad config", func(t *testing.T) {
		policy := filepath.Join(t.TempDir(), "policy.json")
		_ = os.WriteFile(policy, []byte(`{"default":"sometimes"}`), 0o644)
		s := launch(t, conformance, nil, "--policy", policy)
		if code := s.wait(t, 30*time.Second); code != 1 {
			t.Fatalf("exit %d", code)
		}
		s.stderr.waitFor(t, time.Second, func(l string) bool {
			return kindIs("config-invalid")(l) && strings.Contains(l, "default must be")
		})
	})
	t.Run("boot-failed never listens", func(t *testing.T) {
		idx := filepath.Join(t.TempDir(), "index.json")
		b, _ := os.ReadFile(conformance)
		_ = os.WriteFile(idx, b, 0o644) // its modules are not beside this copy
		s := launch(t, idx, nil)
		if code := s.wait(t, 30*time.Second); code != 1 {
			t.Fatalf("exit %d", code)
		}
		rec := record(t, s.stderr.waitFor(t, time.Second, kindIs("boot-failed")))
		// exactly the reference services' text; where it looked, apart
		if p := fmt.Sprint(rec["problems"]); p != "[Missing module: conformance.wasm]" || rec["moduleRoot"] != filepath.Dir(idx) {
			t.Fatalf("record %v", rec)
		}
		for _, l := range s.stderr.snapshot() {
			if kindIs("listening")(l) {
				t.Fatal("listened after a boot failure")
			}
		}
	})
}

// TestFuelIsTheSameAcrossProcesses runs the same call in two fresh packd
// processes and compares the fuel each reports.
func TestFuelIsTheSameAcrossProcesses(t *testing.T) {
	var seen []string
	for i := 0; i < 2; i++ {
		cmd := exec.Command(packdPath, "invoke", "--index", hostileIndex, "--cache-dir", cacheDir, "--tool", "hostile.work")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != `{"v":2,"kind":"result","output":{"ok":true}}`+"\n" {
			t.Fatalf("%v %s %s", err, out, stderr.String())
		}
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.HasPrefix(l, "packd invoke: fuel used: ") {
				seen = append(seen, l)
			}
		}
	}
	if len(seen) != 2 || seen[0] != seen[1] || seen[0] == "packd invoke: fuel used: 0" {
		t.Fatalf("fuel lines %q", seen)
	}
}

// TestServicePolicyAndAudit: packd serve with --policy and --audit-log.
func TestServicePolicyAndAudit(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	audit := filepath.Join(dir, "audit.log")
	_ = os.WriteFile(policy, []byte(`{"default":"allow","tenants":{"t-conformance":{"deny":["conformance.throws"]}}}`), 0o644)
	s := start(t, conformance, nil, "--policy", policy, "--audit-log", audit)
	expect(t, s.invoke(t, invokeBody("conformance.throws", "", `{}`, conformanceCtx)), 403,
		`{"error":"The policy does not allow this tenant to call conformance.throws","code":"pack-gate-denied"}`)
	expect(t, s.invoke(t, invokeBody("conformance.echo", "", `{"message":"m"}`, conformanceCtx)), 200,
		`{"v":2,"kind":"result","output":{"message":"m"}}`)
	r := s.do(t, "GET", "/v1/tools/conformance.echo", "", s.auth())
	expect(t, r, 200, `{"verb":"conformance.echo","pack":"conformance","description":"Answers with its message.","category":"tool","params":[{"name":"message","type":"string","required":true,"description":""}]}`)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	data, _ := os.ReadFile(audit)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"outcome":"pack-gate-denied","status":403`) || !strings.Contains(lines[1], `"outcome":"ok","status":200`) {
		t.Fatalf("audit log:\n%s", data)
	}
}

// TestServiceSurvivesHostileModules: a guest growing its table by 32 GiB
// in a loop is answered and the process serves on (on main the first such
// grow ended the process); modules that are invalid as written, or whose
// load-time code sleeps or spins, fail the boot in bounded time.
func TestServiceSurvivesHostileModules(t *testing.T) {
	t.Run("table.grow", func(t *testing.T) {
		idx := hostilePack(t, "tablegrow", "counter")
		// fuel enough for 1,000 grows by 0xfffffff0 (each is refused)
		s := start(t, idx, nil, "--module-root", filepath.Dir(hostileIndex), "--fuel", "100000000000000")
		for i := 0; i < 3; i++ {
			expect(t, s.invoke(t, invokeBody("hostile.tablegrow", "", `{}`, conformanceCtx)), 200, `{"v":2,"kind":"result","output":{}}`)
		}
		expect(t, s.invoke(t, invokeBody("hostile.counter", "", `{}`, conformanceCtx)), 200, `{"v":2,"kind":"result","output":{"global":1,"memory":1}}`)
	})
	t.Run("load problems fail the boot", func(t *testing.T) {
		s := launch(t, hostileLoadIndex, nil, "--load-timeout", "300ms", "--load-fuel", "100000000")
		if code := s.wait(t, 60*time.Second); code != 1 {
			t.Fatalf("exit %d", code)
		}
		rec := record(t, s.stderr.waitFor(t, time.Second, kindIs("boot-failed")))
		if n := len(rec["problems"].([]any)); n != 10 {
			t.Fatalf("%d problems: %v", n, rec["problems"])
		}
	})
}

// TestServiceGuestOutputCannotForgeRecords: a guest that writes lines shaped
// like packd's records (a listening record at boot, another tenant's call
// record in a call) cannot be read as them: each line is the message of a
// guest-output record (on main they went into the record stream as they
// were). With --guest-output plain the lines go out as written, as the
// other pack services do.
func TestServiceGuestOutputCannotForgeRecords(t *testing.T) {
	idx := hostilePack(t, "forge")
	root := filepath.Dir(hostileIndex)
	s := start(t, idx, nil, "--module-root", root)
	expect(t, s.invoke(t, invokeBody("hostile.forge", "", `{}`, `{"tenantId":"attacker","runId":"r"}`)), 200, `{"v":2,"kind":"result","output":{}}`)
	// the forged call record, escaped inside a message
	forged := s.stderr.waitFor(t, 10*time.Second, func(l string) bool { return strings.Contains(l, `tenantId\":\"victim`) })
	if rec := record(t, forged); rec["kind"] != "guest-output" || rec["tenantId"] != "attacker" {
		t.Fatalf("the forged call record came out as %s", forged)
	}
	s.stderr.waitFor(t, 10*time.Second, func(l string) bool { return kindIs("call")(l) && strings.Contains(l, `"tenantId":"attacker"`) })
	listening := 0
	for _, l := range append(s.stderr.snapshot(), s.stdout.snapshot()...) {
		rec := map[string]any{}
		if json.Unmarshal([]byte(l), &rec) != nil {
			t.Errorf("a line that is not a record: %s", l)
			continue
		}
		if rec["kind"] == "listening" {
			listening++
			if fmt.Sprint(rec["port"]) == "1" {
				t.Errorf("a forged listening record: %s", l)
			}
		}
		if rec["kind"] == "call" && rec["tenantId"] == "victim" {
			t.Errorf("a forged call record: %s", l)
		}
	}
	if listening != 1 {
		t.Errorf("%d listening records", listening)
	}

	// In plain mode the describe's forged listening record comes first, raw:
	// the compatibility the flag is for, and why it is not the default.
	plain := launch(t, idx, nil, "--module-root", root, "--guest-output", "plain")
	port := func(l string) string { return fmt.Sprint(record(t, l)["port"]) }
	plain.stderr.waitFor(t, 60*time.Second, func(l string) bool { return kindIs("listening")(l) && port(l) == "1" })
	real := record(t, plain.stderr.waitFor(t, 60*time.Second, func(l string) bool { return kindIs("listening")(l) && port(l) != "1" }))
	plain.base = fmt.Sprintf("http://127.0.0.1:%d", int(real["port"].(float64)))
	expect(t, plain.invoke(t, invokeBody("hostile.forge", "", `{}`, `{"tenantId":"attacker","runId":"r"}`)), 200, `{"v":2,"kind":"result","output":{}}`)
	plain.stdout.waitFor(t, 10*time.Second, func(l string) bool { return kindIs("listening")(l) && port(l) == "1" })
}

// TestServiceMemoryBudget: a call whose instance memory does not fit in
// what the budget has left answers 503 overloaded with Retry-After, while
// a call that fits is served.
func TestServiceMemoryBudget(t *testing.T) {
	idx := hostilePack(t, "fill", "counter")
	// 24 MiB for instances: one fill (16 MiB of initial memory) at a time.
	s := start(t, idx, nil, "--module-root", filepath.Dir(hostileIndex), "--memory-limit-mib", "24", "--memory-budget-mib", "48")
	first := make(chan reply, 1)
	startFirst := func() {
		go func() {
			first <- s.invoke(t, invokeBody("hostile.fill", "", `{}`, conformanceCtx), "kindgi-timeout-ms", "4000")
		}()
	}
	startFirst()
	var refused reply
	for i := 0; i < 300 && refused.status != 503; i++ {
		time.Sleep(10 * time.Millisecond)
		select {
		case r := <-first: // a second call got there first, and this one was refused
			if r.status != 503 {
				t.Fatalf("the first fill: %d %s", r.status, r.body)
			}
			startFirst()
			continue
		default:
		}
		refused = s.invoke(t, invokeBody("hostile.fill", "", `{}`, conformanceCtx), "kindgi-timeout-ms", "50")
	}
	if refused.status != 503 || refused.body != `{"error":"overloaded"}` || refused.header.Get("Retry-After") != "1" {
		t.Fatalf("a second fill beside the first: %d %s", refused.status, refused.body)
	}
	expect(t, s.invoke(t, invokeBody("hostile.counter", "", `{}`, conformanceCtx)), 200, `{"v":2,"kind":"result","output":{"global":1,"memory":1}}`)
	if r := <-first; r.status != 200 || !strings.Contains(r.body, `"code":"deadline-exceeded"`) {
		t.Fatalf("the first fill: %d %s", r.status, r.body)
	}
}

// TestServicePooledTenantsInterleave: calls of two tenants interleaved on
// one pool, concurrently, each see only their own context.
func TestServicePooledTenantsInterleave(t *testing.T) {
	s := start(t, conformance, map[string]string{"CONFORMANCE_VISIBLE": "1", "KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "64"}, "--pool-size", "4")
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := 0; i < 40; i++ {
		tenant := []string{"t-alpha", "t-beta"}[i%2]
		secret := fmt.Sprintf("secret-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := fmt.Sprintf(`{"tenantId":%q,"runId":"r","secrets":{"k":%q}}`, tenant, secret)
			r := s.invoke(t, invokeBody("conformance.context", "", `{}`, ctx))
			want := fmt.Sprintf(`{"v":2,"kind":"result","output":{"tenantId":%q,"runId":"r","env":{},"secrets":{"k":%q},"config":{}}}`, tenant, secret)
			if r.status != 200 || r.body != want {
				errs <- fmt.Sprintf("%d %s\nwant %s", r.status, r.body, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestServiceKindgiWrittenIndex: an index as a kindgi indexer writes it
// (PROTOCOL-NOTES §1's real example: sorted keys, a guardrail whose action
// is an object, agents and flows) passes packd check and serves its tool
// and check.
func TestServiceKindgiWrittenIndex(t *testing.T) {
	idx := filepath.Join("..", "..", "testdata", "kindgi", "index.json")
	if r := packd(t, "check", "--index", idx); r.code != 0 || !strings.Contains(r.stdout, "ok: pack acme.ledger 1.0.0, 1 tool(s), 1 check(s)") {
		t.Fatalf("check: %d %s %s", r.code, r.stdout, r.stderr)
	}
	s := start(t, idx, nil)
	expect(t, s.invoke(t, invokeBody("acme.ledger.record-expense", "1.0.0", `{"vendor":"v","amountCents":5}`, conformanceCtx)),
		200, `{"v":2,"kind":"result","output":{"expenseId":"exp-1"}}`)
	expect(t, s.invoke(t, `{"v":2,"kind":"check-invoke","check":{"id":"acme.ledger.checks.response-not-empty"},"config":{},"trace":{"output":"x"}}`),
		200, `{"v":2,"kind":"check-result","result":{"passed":true}}`)
}

// TestServiceRefusesIndexFieldsOfTheWrongType: every field the index
// schema types is checked, and the problem names the field.
func TestServiceRefusesIndexFieldsOfTheWrongType(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kindgi", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, problem string }{
		{`"action": {
        "on-violation": "halt"
      }`, `"action": "halt"`, `guardrails[0] "action" must be an object (found a string)`},
		{`"severity": "error"`, `"severity": 3`, `guardrails[0] "severity" must be a non-empty string`},
		{`"scope": {
        "when": "runtime-only"
      }`, `"scope": []`, `guardrails[0] "scope" must be an object (found an array)`},
		{`"effects": [
        {`, `"effects": [7, {`, `effects[0] must be an object (found a number)`},
		{`"kernelPayloadVersion": 1`, `"kernelPayloadVersion": 2`, `flows[0] "kernelPayloadVersion" must be 1`},
		{`"instructions": "Record the expenses the user reports.",`, ``, `agents[0] is missing "instructions"`},
	} {
		if !strings.Contains(string(data), c.from) {
			t.Fatalf("the fixture has no %s", c.from)
		}
		dir := t.TempDir()
		bad := filepath.Join(dir, "index.json")
		if err := os.WriteFile(bad, []byte(strings.Replace(string(data), c.from, c.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		r := packd(t, "check", "--index", bad, "--module-root", filepath.Join("..", "..", "testdata", "kindgi"))
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, c.problem) {
			t.Errorf("%s: %d\n%s%s\nwant %s", c.to, r.code, r.stdout, r.stderr, c.problem)
		}
	}
}

// TestServicesShareAHost: several packd on one host all boot. By default
// /metrics listens on port 9464 of --host; when that is taken each serves
// on a free port, says so in a warning record and in metricsPort, and
// answers there. An address the operator named that is taken fails the
// boot.
func TestServicesShareAHost(t *testing.T) {
	// Hold the default port, whatever else on this machine may hold it.
	if hold, err := net.Listen("tcp", "127.0.0.1:9464"); err == nil {
		defer hold.Close()
	}
	for i := 0; i < 2; i++ {
		s := start(t, conformance, nil, "--metrics-addr=")
		rec := record(t, s.stderr.waitFor(t, 5*time.Second, kindIs("listening")))
		port, _ := rec["metricsPort"].(float64)
		warn := record(t, s.stderr.waitFor(t, time.Second, kindIs("metrics-port-taken")))
		if port == 0 || port == 9464 || warn["level"] != "warn" || warn["metricsPort"] != port {
			t.Fatalf("service %d: listening %v, warning %v", i, rec, warn)
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", int(port)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "packd_build_info") {
			t.Fatalf("service %d metrics: %d %.200s", i, resp.StatusCode, body)
		}
	}
	s := launch(t, conformance, nil, "--metrics-addr", "127.0.0.1:9464")
	if code := s.wait(t, 30*time.Second); code != 1 {
		t.Fatalf("exit %d", code)
	}
	s.stderr.waitFor(t, time.Second, func(l string) bool {
		return kindIs("boot-failed")(l) && strings.Contains(l, "Cannot listen for metrics")
	})
}

// TestServiceTooLargeBodyIsAnsweredToClientsThatWriteItAll: a client that
// writes its whole body before reading (as Python's requests does) gets
// the 413 and its body, with a Content-Length and chunked.
func TestServiceTooLargeBodyIsAnsweredToClientsThatWriteItAll(t *testing.T) {
	s := start(t, conformance, nil)
	addr := strings.TrimPrefix(s.base, "http://")
	body := bytes.Repeat([]byte("x"), 11<<20)
	for _, chunked := range []bool{false, true} {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
		head := "POST /v1/invoke HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nkindgi-pack-token: " + s.token + "\r\n"
		var msg []byte
		if chunked {
			msg = append([]byte(head+"Transfer-Encoding: chunked\r\n\r\n"), fmt.Sprintf("%x\r\n", len(body))...)
			msg = append(append(msg, body...), "\r\n0\r\n\r\n"...)
		} else {
			msg = append([]byte(head+fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...)
		}
		if _, err := conn.Write(msg); err != nil {
			t.Fatalf("chunked %v: writing the whole body: %v", chunked, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("chunked %v: %v", chunked, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != 413 || string(got) != `{"error":"Request body too large"}` {
			t.Fatalf("chunked %v: %d %s", chunked, resp.StatusCode, got)
		}
	}
}

// TestServiceEnvFilter: KINDGI_PACK_ENV_FILTER as the other pack services
// read it. By default pack code sees the declared names only, and an
// env-dropped record names the rest; "off" passes the process
// environment through but for the KINDGI_ names (the token among them);
// anything else is a configuration error.
func TestServiceEnvFilter(t *testing.T) {
	envNames := func(s *served) string {
		r := s.invoke(t, invokeBody("conformance.process-env", "", `{}`, conformanceCtx))
		if r.status != 200 {
			t.Fatalf("process-env: %d %s", r.status, r.body)
		}
		return r.body
	}
	env := map[string]string{"CONFORMANCE_VISIBLE": "1", "UNDECLARED_SECRET": "x"}
	s := start(t, conformance, env)
	if got := envNames(s); got != `{"v":2,"kind":"result","output":{"names":["CONFORMANCE_VISIBLE"]}}` {
		t.Fatalf("filter on: %s", got)
	}
	rec := record(t, s.stderr.waitFor(t, time.Second, kindIs("env-dropped")))
	names := fmt.Sprint(rec["names"])
	if rec["filter"] != "on" || !strings.Contains(names, "UNDECLARED_SECRET") || strings.Contains(names, "CONFORMANCE_VISIBLE") || strings.Contains(names, "=") {
		t.Fatalf("env-dropped: %v", rec)
	}

	env["KINDGI_PACK_ENV_FILTER"] = "off"
	s = start(t, conformance, env)
	got := envNames(s)
	for _, name := range []string{"CONFORMANCE_VISIBLE", "UNDECLARED_SECRET", "PATH", "PORT"} {
		if !strings.Contains(got, `"`+name+`"`) {
			t.Errorf("filter off: %s is not seen: %s", name, got)
		}
	}
	if strings.Contains(got, "KINDGI_") {
		t.Errorf("filter off: pack code sees a KINDGI_ name: %s", got)
	}
	rec = record(t, s.stderr.waitFor(t, time.Second, kindIs("env-dropped")))
	if rec["filter"] != "off" || fmt.Sprint(rec["names"]) != "[KINDGI_PACK_ENV_FILTER]" {
		t.Fatalf("env-dropped: %v", rec)
	}

	env["KINDGI_PACK_ENV_FILTER"] = "loose"
	bad := launch(t, conformance, env)
	if code := bad.wait(t, 30*time.Second); code != 1 {
		t.Fatalf("exit %d", code)
	}
	bad.stderr.waitFor(t, time.Second, func(l string) bool {
		return kindIs("config-invalid")(l) && strings.Contains(l, `KINDGI_PACK_ENV_FILTER must be \"on\" or \"off\", got \"loose\"`)
	})
}

// TestServiceOrdersIndexLikeKeysAsJavaScript: keys that are array indices
// come first, in numeric order, in what packd answers (as JSON.stringify
// writes them) and in its validation issues (as Ajv walks them).
func TestServiceOrdersIndexLikeKeysAsJavaScript(t *testing.T) {
	s := start(t, conformance, nil)
	expect(t, s.invoke(t, invokeBody("conformance.defaults", "", `{"name":"Ada","b":1,"10":2,"a":3,"2":4}`, conformanceCtx)),
		200, `{"v":2,"kind":"result","output":{"2":4,"10":2,"name":"Ada","b":1,"a":3,"greeting":"Hello","options":{"loud":false}}}`)
	r := s.invoke(t, invokeBody("conformance.echo", "", `{"message":"m","b":1,"10":2,"a":3,"2":4}`, conformanceCtx))
	var got struct {
		Issues []struct {
			Params map[string]any `json:"params"`
		} `json:"issues"`
	}
	_ = json.Unmarshal([]byte(r.body), &got)
	var order []string
	for _, is := range got.Issues {
		order = append(order, fmt.Sprint(is.Params["additionalProperty"]))
	}
	if strings.Join(order, ",") != "2,10,b,a" {
		t.Fatalf("issues in order %v: %s", order, r.body)
	}
}

// TestVersionAndServeHelp: packd version names the VCS revision it was
// built from (it printed "dev"), and packd serve -h prints the serve flags
// and the environment on stdout and exits 0 (it wrote a config-invalid
// record and exited 1).
func TestVersionAndServeHelp(t *testing.T) {
	out, err := exec.Command(packdPath, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	// The revision its build info names (make builds at HEAD; a binary
	// given in PACKD_BINARY may be older).
	if rev := vcsRevision; len(rev) >= 12 {
		if !strings.Contains(string(out), rev[:12]) {
			t.Errorf("packd version = %q, want revision %s in it", out, rev[:12])
		}
	} else if !strings.HasPrefix(string(out), "packd ") {
		t.Errorf("packd version = %q", out)
	}

	cmd := exec.Command(packdPath, "serve", "-h")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("packd serve -h: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"-index", "-module-root", "-pool-size", "-metrics-addr", "KINDGI_PACK_SERVICE_TOKEN", "PORT"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("packd serve -h does not mention %s:\n%s", want, stdout.String())
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("packd serve -h wrote to stderr: %s", stderr.String())
	}
}

// TestServiceCacheDirThatCannotBeUsed: when the default compilation cache
// directory cannot be made or written (a read-only home, a container's
// root filesystem), packd serves on with the cache in memory and says so
// in a cache-unavailable record (it failed the boot); a cache directory
// the operator named that cannot be used still fails it.
func TestServiceCacheDirThatCannotBeUsed(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(notADir, []byte("x"), 0o644)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(notADir, "home"), "XDG_CACHE_HOME=", "PORT=0", tokenEnv + "=tok"}

	cmd := exec.Command(packdPath, "--index", conformance, "--host", "127.0.0.1", "--metrics-addr", "off")
	cmd.Env = env
	errp, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderr := collect(errp)
	defer func() { _ = cmd.Process.Kill(); <-stderr.done; _ = cmd.Wait() }()
	warned := record(t, stderr.waitFor(t, 60*time.Second, kindIs("cache-unavailable")))
	if warned["level"] != "warn" || !strings.Contains(warned["message"].(string), "cannot be used") {
		t.Fatalf("record %v", warned)
	}
	stderr.waitFor(t, 60*time.Second, kindIs("listening"))

	explicit := exec.Command(packdPath, "--index", conformance, "--host", "127.0.0.1", "--metrics-addr", "off", "--cache-dir", filepath.Join(notADir, "cache"))
	explicit.Env = env
	out, err := explicit.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), `"kind":"config-invalid"`) || !strings.Contains(string(out), "cannot be used") {
		t.Fatalf("an explicit --cache-dir that cannot be used: %v\n%s", err, out)
	}
}

// TestServiceRepairsACorruptCache: a compilation-cache entry cut short (as
// a full disk or a killed write leaves one) does not fail the boot, on
// this start or the next: packd finds it no longer matches its seal,
// removes it, compiles anew, listens, and says so in a cache-repaired
// record (on main: boot-failed, "compilationcache: ... EOF", on every
// restart).
func TestServiceRepairsACorruptCache(t *testing.T) {
	dir := t.TempDir()
	if r := packd(t, "check", "--index", conformance, "--cache-dir", dir); r.code != 0 {
		t.Fatalf("warming the cache: %d %s", r.code, r.stderr)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if len(entries) == 0 {
		t.Fatal("no cache entry")
	}
	for _, e := range entries {
		if !strings.HasSuffix(e, ".seal") {
			_ = os.Truncate(e, 20)
		}
	}
	s := start(t, conformance, nil, "--cache-dir", dir)
	rec := record(t, s.stderr.waitFor(t, 10*time.Second, kindIs("cache-repaired")))
	if rec["level"] != "warn" || !strings.Contains(fmt.Sprint(rec["error"]), "did not match their seal") {
		t.Errorf("record %v", rec)
	}
	expect(t, s.invoke(t, invokeBody("conformance.echo", "", `{"message":"hi"}`, conformanceCtx)), 200, `{"v":2,"kind":"result","output":{"message":"hi"}}`)
}

// TestGuestOutputNamesItsTrace: a call's pack code output lines carry the
// call's trace id (the caller's traceparent's), as its call line does, so
// an SRE finds them by trace.
func TestGuestOutputNamesItsTrace(t *testing.T) {
	s := start(t, conformance, nil)
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	if r := s.invoke(t, invokeBody("conformance.noisy", "", `{}`, `{"tenantId":"t","runId":"r"}`), "traceparent", "00-"+trace+"-00f067aa0ba902b7-01"); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	line := s.stderr.waitFor(t, 10*time.Second, guestLine("stdout", "noisy: a line on stdout"))
	if rec := record(t, line); rec["traceId"] != trace || rec["tenantId"] != "t" || rec["toolId"] != "conformance.noisy" {
		t.Errorf("the guest-output line: %s", line)
	}
}
