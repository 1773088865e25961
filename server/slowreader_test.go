package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/host"
)

// TestASlowReaderHoldsNoSlot: a caller that never reads its 9 MB answer
// keeps its connection, not the concurrency slot: with a cap of one,
// another caller is answered while the first answer waits to be written
// (on main every other caller got 503 overloaded for as long as the slow
// reader liked).
func TestASlowReaderHoldsNoSlot(t *testing.T) {
	p, err := host.Load(context.Background(), host.Config{
		IndexPath: filepath.Join("..", "wasm-examples", "conformance", "index.json"),
		Sandbox:   host.SandboxConfig{CacheDir: filepath.Join(t.TempDir(), "cache"), DefaultFuel: 1 << 60}, // echoing 9 MB takes more than the default
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	s, err := New(Config{Pack: p, Token: "tok", MaxConcurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()

	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	big := `{"v":2,"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"` + strings.Repeat("x", 9<<20) +
		`"},"ctx":{"tenantId":"t","runId":"r"}}`
	_ = conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if _, err := fmt.Fprintf(conn, "POST /v1/invoke HTTP/1.1\r\nHost: x\r\nKindgi-Pack-Token: tok\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(big), big); err != nil {
		t.Fatal(err)
	}
	// conn is never read: its answer cannot be written whole. Wait until
	// its call holds the slot.
	for start := time.Now(); len(s.sem) == 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatal("the slow reader's call was never admitted")
		}
	}

	small := `{"v":2,"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"hi"},"ctx":{"tenantId":"t","runId":"r"}}`
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/invoke", strings.NewReader(small))
		req.Header.Set("Kindgi-Pack-Token", "tok")
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		last = fmt.Sprintf("%d %s", res.StatusCode, b)
		if res.StatusCode == 200 {
			if string(b) != `{"v":2,"kind":"result","output":{"message":"hi"}}` {
				t.Fatalf("the other caller: %s", last)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the other caller was never answered while a slow reader waited: %s", last)
}

func TestWriteTimeoutGrowsWithTheAnswer(t *testing.T) {
	if writeTimeout(100) != 10*time.Second || writeTimeout(10<<20) != 170*time.Second {
		t.Fatalf("%v %v", writeTimeout(100), writeTimeout(10<<20))
	}
}
