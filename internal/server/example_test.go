package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/server"
	"github.com/kindgi/packd/internal/service"
)

// Serve a loaded pack (a service of it) over HTTP (here with httptest) and
// call a tool.
func ExampleNew() {
	ctx := context.Background()
	pack, err := host.Load(ctx, host.Config{
		IndexPath: filepath.Join("..", "..", "testdata", "kindgi", "index.json"),
		Sandbox:   host.SandboxConfig{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pack.Close(ctx)
	svc, err := service.New(service.Config{Pack: pack})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer svc.Close(ctx)
	srv, err := server.New(server.Config{Service: svc, Token: "secret"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	req, _ := http.NewRequest("POST", ts.URL+"/v1/invoke", strings.NewReader(
		`{"v":2,"kind":"invoke","tool":{"id":"acme.ledger.record-expense"},"input":{"vendor":"v","amountCents":5},"ctx":{"tenantId":"t","runId":"r"}}`))
	req.Header.Set("kindgi-pack-token", "secret")
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 {"v":2,"kind":"result","output":{"expenseId":"exp-1"}}
}
