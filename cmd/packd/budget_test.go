package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTenantBudgets (and the usage log): a tenant that outruns its fuel budget with one long
// call (which finishes within its own limits, capped by the budget's
// maxFuelPerCall) is refused before any pack code runs, over /v1/invoke
// and MCP alike: 503 overloaded, its Retry-After the time its debt takes
// to pay at its rate, tenant-budget in the audit line; a tenant over its
// calls a second is refused the same way, and a tenant without a budget
// is served. A reload keeps the debt, a new policy applies from the next
// call, and a policy that cannot be read fails the reload, naming the
// field, while the old one goes on.
func TestTenantBudgets(t *testing.T) {
	idx := indexedCopy(t, "pyhostile", "hostile.wasm", "pyhostile")
	dir := t.TempDir()
	policy, audit, usage := filepath.Join(dir, "policy.json"), filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "usage.jsonl")
	writePolicy := func(body string) {
		t.Helper()
		if err := os.WriteFile(policy, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const budgets = `{"tenants":{
		"t-spin":{"budget":{"fuelPerSecond":1000000,"maxFuelPerCall":50000000}},
		"t-calls":{"budget":{"callsPerSecond":0.001}}}}`
	writePolicy(budgets)
	records := filepath.Join(dir, "records")
	s := start(t, idx, nil, "--policy", policy, "--audit-log", audit, "--usage-log", usage, "--usage-interval", "1s", "--record", records)
	call := func(tenant, tool string) reply {
		t.Helper()
		return s.invoke(t, invokeBody("pyhostile."+tool, "", `{"n":1}`, `{"tenantId":"`+tenant+`","runId":"r"}`))
	}
	refused := func(r reply, least, most int) {
		t.Helper()
		wait, _ := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != 503 || r.body != `{"error":"overloaded"}` || wait < least || wait > most {
			t.Fatalf("%d %s, Retry-After %q: want 503 overloaded and %d–%d s", r.status, r.body, r.header.Get("Retry-After"), least, most)
		}
	}

	// One long call: it runs to the budget's cap on a call, under the
	// tool's own fuel (the default 1e10), and leaves a debt of 49 s.
	expect(t, call("t-spin", "loop"), 200, `{"v":2,"kind":"error","code":"deadline-exceeded","message":"pyhostile.loop passed its deadline: it ran out of fuel after using 50000000 units","toolId":"pyhostile.loop"}`)
	refused(call("t-spin", "ok"), 40, 49)
	// Over MCP, the same tenant's debt.
	res, err := client.Do(mcpCallOK(s, "t-spin"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if wait, _ := strconv.Atoi(res.Header.Get("Retry-After")); res.StatusCode != http.StatusServiceUnavailable || wait < 40 || wait > 49 || !strings.Contains(string(body), `"tenant-budget"`) {
		t.Fatalf("over MCP: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	// Calls a second: one, then the wait for the next.
	expect(t, call("t-calls", "ok"), 200, `{"v":2,"kind":"result","output":{"n":1}}`)
	refused(call("t-calls", "ok"), 990, 1000)
	expect(t, call("t-free", "ok"), 200, `{"v":2,"kind":"result","output":{"n":1}}`)

	// The refusals, in the audit log: the calls that never ran.
	waitAudit := func(n int) []string {
		t.Helper()
		var lines []string
		for range 200 {
			b, _ := os.ReadFile(audit)
			lines = lines[:0]
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, `"outcome":"tenant-budget"`) {
					lines = append(lines, l)
				}
			}
			if len(lines) >= n {
				return lines
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%d tenant-budget lines in the audit log, want %d", len(lines), n)
		return nil
	}
	if b, _ := os.ReadFile(audit); !strings.Contains(string(b), `"tenantId":"t-calls","runId":"r","face":"http","target":"tool","toolId":"pyhostile.ok","version":"1.0.0","outcome":"ok"`) ||
		!strings.Contains(string(b), `"obligations":[{"kind":"rateLimit","resource":"calls","windowSecs":1,"max":0.001}]`) ||
		!strings.Contains(string(b), `"obligations":[{"kind":"rateLimit","resource":"fuel","windowSecs":1,"max":1000000},{"kind":"limit","resource":"fuel","max":50000000}]`) {
		t.Errorf("the admitted calls' audit lines do not say their obligations:\n%s", b)
	}
	for _, l := range waitAudit(3) {
		if !strings.Contains(l, `"status":503`) || strings.Contains(l, `"fuel":`) && !strings.Contains(l, `"fuel":0`) {
			t.Errorf("a refused call's audit line: %s", l)
		}
	}

	// The usage log's lines of t-spin (one an interval it called in): its
	// long call's fuel, and its refusals by outcome.
	var fuel, refusals float64
	for i := 0; fuel != 5e7 || refusals != 2; i++ {
		if i > 100 {
			t.Fatalf("t-spin's usage lines add up to %g fuel and %g refusals, want 5e7 and 2", fuel, refusals)
		}
		time.Sleep(50 * time.Millisecond)
		b, _ := os.ReadFile(usage)
		fuel, refusals = 0, 0
		for _, l := range strings.Split(string(b), "\n") {
			var u struct {
				TenantID string
				Fuel     float64
				Outcomes map[string]float64
			}
			if json.Unmarshal([]byte(l), &u) == nil && u.TenantID == "t-spin" {
				fuel, refusals = fuel+u.Fuel, refusals+u.Outcomes["tenant-budget"]
			}
		}
	}

	// The long call's record replays to the fuel it was billed, under the
	// budget's cap (a limit of the call's, recorded with it).
	if r := replayProc(t, nil, "--index", idx, "-v", records); r.code != 0 || !strings.Contains(r.stdout, "fuel 50000000\n") {
		t.Fatalf("replay: %d %s %s", r.code, r.stdout, r.stderr)
	}

	// A reload keeps the debt; a new policy applies from the next call.
	s.hup(t, "reloaded")
	refused(call("t-spin", "ok"), 35, 49)
	writePolicy(`{"tenants":{"t-spin":{"budget":{"fuelPerSecond":1e15}},"t-calls":{"budget":{"callsPerSecond":0.001}}}}`)
	s.hup(t, "reloaded")
	expect(t, call("t-spin", "ok"), 200, `{"v":2,"kind":"result","output":{"n":1}}`)
	// A policy that cannot be read: the reload fails, naming the field,
	// and the policy read before goes on.
	writePolicy(`{"tenants":{"t-calls":{"budget":{"callsPerSecond":"many"}}}}`)
	if rec := s.hup(t, "reloaded", "reload-failed"); rec["kind"] != "reload-failed" || !strings.Contains(strings.Join(anyStrings(rec["problems"]), " "), "tenants.budget.callsPerSecond must be a number") {
		t.Fatalf("a bad policy's reload: %v", rec)
	}
	refused(call("t-calls", "ok"), 900, 1000)

	// At boot, a budget that cannot be read is a config-invalid line
	// naming the field.
	b := launch(t, idx, nil, "--policy", policy)
	line := b.stderr.waitFor(t, 30*time.Second, kindIs("config-invalid"))
	if !strings.Contains(line, "tenants.budget.callsPerSecond must be a number, not string") {
		t.Fatalf("config-invalid: %s", line)
	}
}

// mcpCallOK is a POST to s's /mcp calling pyhostile.ok for tenant.
func mcpCallOK(s *served, tenant string) *http.Request {
	req, _ := http.NewRequest("POST", s.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pyhostile.ok","arguments":{"n":1},"_meta":{"kindgi.com/ctx":{"tenantId":"`+tenant+`","runId":"r"}}}}`))
	req.Header = http.Header{"Authorization": {"Bearer " + s.token}, "Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	return req
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestTenantBudgetHoldsAcrossFaces: a tenant's callers on /v1/invoke and
// on MCP at once, sixteen of them, none waiting for its Retry-After, share
// its budget: over 2 s, no more calls run than its burst and its rate
// allow, whether it is bounded in calls a second or in fuel a second
// (many short calls, each spending its fuel as the others are admitted).
func TestTenantBudgetHoldsAcrossFaces(t *testing.T) {
	idx := indexedCopy(t, "pyhostile", "hostile.wasm", "pyhostile")
	policy := filepath.Join(t.TempDir(), "policy.json")
	// A pooled pyhostile.ok call burns 445,590 fuel (a Python echo): 2e6
	// fuel a second (and a burst of a second's worth) is 4.5 calls a second.
	const okFuel = 445_590
	if err := os.WriteFile(policy, []byte(`{"tenants":{"t-calls":{"budget":{"callsPerSecond":5}},"t-fuel":{"budget":{"fuelPerSecond":2e6}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := start(t, idx, nil, "--policy", policy)
	for _, c := range []struct {
		tenant string
		most   func(seconds float64) int64
	}{
		{"t-calls", func(sec float64) int64 { return 5 + int64(5*sec) + 1 }},
		// The burst and the rate, and at most the sixteen calls admitted
		// at once before any of them took its first slice.
		{"t-fuel", func(sec float64) int64 { return int64((2e6+2e6*sec)/okFuel) + 16 }},
	} {
		t.Run(c.tenant, func(t *testing.T) {
			var ran, refused atomic.Int64
			began := time.Now()
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Since(began) < 2*time.Second {
						var req *http.Request
						if i%2 == 0 {
							req, _ = http.NewRequest("POST", s.base+"/v1/invoke", strings.NewReader(invokeBody("pyhostile.ok", "", `{"n":1}`, `{"tenantId":"`+c.tenant+`","runId":"r"}`)))
							req.Header = http.Header{"Kindgi-Pack-Token": {s.token}, "Content-Type": {"application/json"}}
						} else {
							req = mcpCallOK(s, c.tenant)
						}
						res, err := client.Do(req)
						if err != nil {
							t.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, res.Body)
						res.Body.Close()
						switch res.StatusCode {
						case http.StatusOK:
							ran.Add(1)
						case http.StatusServiceUnavailable:
							refused.Add(1)
						default:
							t.Errorf("status %d", res.StatusCode)
						}
					}
				}()
			}
			wg.Wait()
			sec := time.Since(began).Seconds()
			if most := c.most(sec); ran.Load() < 4 || ran.Load() > most || refused.Load() == 0 {
				t.Fatalf("%d calls ran and %d were refused in %.1f s: want from 4 to %d to run", ran.Load(), refused.Load(), sec, most)
			}
			t.Logf("%d calls ran and %d were refused in %.1f s", ran.Load(), refused.Load(), sec)
		})
	}
}
