package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

// servePack serves an index of tools (a JSON array of index entries) whose
// modules are in moduleRoot.
func servePack(t *testing.T, moduleRoot, tools string, sc service.Config) *service.Service {
	t.Helper()
	return servePackGated(t, moduleRoot, tools, sc, nil)
}

// servePackGated is servePack with a gate.
func servePackGated(t *testing.T, moduleRoot, tools string, sc service.Config, gate host.Gate) *service.Service {
	t.Helper()
	dir := t.TempDir()
	index := fmt.Sprintf(`{"v":1,"packId":"mcptest","packVersion":"1.0.0","artifactVersion":"mcptest-1","publishedAt":"2026-12-05T00:00:00Z","tools":%s,"guardrails":[],"agents":[],"flows":[]}`, tools)
	path := filepath.Join(dir, "index.json")
	if err := os.WriteFile(path, []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs(moduleRoot)
	return serveIndex(t, host.Config{IndexPath: path, ModuleRoot: root, Gate: gate}, sc)
}

// serveIndex loads a pack (with the MCP face's rules, and the tests'
// compilation cache) and serves it through a service, both closed when the
// test ends.
func serveIndex(t *testing.T, hc host.Config, sc service.Config) *service.Service {
	t.Helper()
	hc.IndexRules, hc.Sandbox.CacheDir = IndexProblems, cacheDir
	p, err := host.Load(context.Background(), hc)
	if err != nil {
		t.Fatalf("loading: %v (make builds the test packs)", err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	sc.Pack = p
	svc, err := service.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return svc
}

// TestCanariesFindNothingOverMCP: the Go, TypeScript and Python canary packs,
// which keep every input and tenant they are given in every kind of state
// a pack can hold, find nothing of any other call when called over MCP:
// from one client, from several clients at once, for several tenants.
func TestCanariesFindNothingOverMCP(t *testing.T) {
	for _, c := range []struct{ name, root, module, clean string }{
		{"go", "../../testdata/gocanary", "gocanary.wasm", `{"last":null,"tenants":[],"heap":0,"queued":0,"env":""}`},
		{"ts", "../../testdata/jscanary", "canary.wasm", `{"last":null,"tenants":[],"heap":0,"jobs":0,"env":"","global":null}`},
		{"py", "../../testdata/pycanary", "canary.wasm", `{"last":null,"tenants":[],"heap":0,"env":"","modules":false,"builtins":null,"klass":null,"cycles":0,"gen":0}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := servePack(t, c.root, `[{"id":"canary.keep","input":{"type":"object"},"output":{"type":"object"},"modulePath":"`+c.module+`"}]`, service.Config{})
			_, url := serve(t, svc, Config{})
			call := func(cs *sdk.ClientSession, tenant string, i int) error {
				r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "canary.keep",
					Arguments: map[string]any{"secret": fmt.Sprint("s", i)},
					Meta:      sdk.Meta{metaCtx: map[string]any{"tenantId": tenant, "runId": "r"}}})
				if err != nil {
					return err
				}
				if r.IsError || text(r) != c.clean {
					return fmt.Errorf("call %d (%s) found %s", i, tenant, text(r))
				}
				var want any
				_ = json.Unmarshal([]byte(c.clean), &want)
				if !reflect.DeepEqual(r.StructuredContent, want) {
					return fmt.Errorf("call %d (%s) found, structured, %v", i, tenant, r.StructuredContent)
				}
				return nil
			}
			cs := connect(t, url, testToken)
			for i := range 6 {
				if err := call(cs, fmt.Sprint("tenant-", i%2), i); err != nil {
					t.Fatal(err)
				}
			}
			clients := []*sdk.ClientSession{cs, connect(t, url, testToken), connect(t, url, testToken)}
			var wg sync.WaitGroup
			errs := make(chan error, 24)
			for i := range 24 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := call(clients[i%3], fmt.Sprint("tenant-", i%4), 100+i); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
