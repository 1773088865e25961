package server

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

// TestASlowReaderHoldsNoSlot: a caller that never reads its 9 MB answer
// keeps its connection, not the concurrency slot: with a cap of one,
// another caller is answered while the first answer waits to be written
// (on main every other caller got 503 overloaded for as long as the slow
// reader liked).
func TestASlowReaderHoldsNoSlot(t *testing.T) {
	// echoing 9 MB takes more than the default fuel
	s, ts := servedPack(t, conformanceIndex, host.SandboxConfig{DefaultFuel: 1 << 60}, service.Config{MaxConcurrency: 1}, Config{})

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
	for start := time.Now(); s.svc.InFlight() == 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatal("the slow reader's call was never admitted")
		}
	}

	deadline := time.Now().Add(20 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		status, body, _ := invokeAs(t, ts, "t", "conformance.echo", `{"message":"hi"}`)
		last = fmt.Sprintf("%d %s", status, body)
		if status == 200 {
			if body != `{"v":2,"kind":"result","output":{"message":"hi"}}` {
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
