package service

import (
	"bytes"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAnAuditLineCutByAFullDiskStaysApart: a line the disk took only the
// start of (full) is ended before the next line once space returns, so
// every whole line reads as JSON (before, the cut line and the next were
// glued into one).
func TestAnAuditLineCutByAFullDiskStaysApart(t *testing.T) {
	disk := &fillingDisk{room: []int{30, 0}}
	audit := newAuditLog(disk, nil, nil)
	for _, outcome := range []string{"cut", "lost", "after"} {
		audit.OnCall(Event{Time: time.Unix(0, 0), Parsed: true, Outcome: outcome})
	}
	_ = closeWithin(audit, 5*time.Second)
	lines := strings.Split(strings.TrimSuffix(disk.b.String(), "\n"), "\n")
	var row map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &row); len(lines) != 2 || err != nil || row["outcome"] != "after" {
		t.Fatalf("the file after the disk filled up and had room again (%v):\n%s", err, disk.b.String())
	}
}

// fillingDisk takes, at each write, as many bytes as room says (then
// answers ENOSPC), and every byte once room is used up.
type fillingDisk struct {
	b    bytes.Buffer
	room []int
}

func (d *fillingDisk) Write(p []byte) (int, error) {
	if len(d.room) == 0 {
		return d.b.Write(p)
	}
	n := min(len(p), d.room[0])
	d.room = d.room[1:]
	d.b.Write(p[:n])
	return n, syscall.ENOSPC
}

func (d *fillingDisk) Close() error { return nil }
