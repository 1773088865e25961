// Package deploy holds packd's deployment files (systemd, and the tests
// that hold them to what docs/deploy.md promises).
package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unit reads a systemd unit's [Service] settings (the last of repeated
// keys wins, as systemd's do for these).
func unit(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	settings, section := map[string]string{}, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			settings[k] = v
		}
	}
	return settings
}

// TestSystemdUnit: the unit runs packd hardened (a dynamic user, a
// read-only system, no new privileges, no capabilities, a memory limit),
// waits longer than the 8 s drain to stop it, keeps the compilation cache
// across restarts, has a logs directory it may write an audit log into,
// and systemd-analyze verify accepts it (where systemd is installed).
func TestSystemdUnit(t *testing.T) {
	path := filepath.Join("systemd", "packd.service")
	u := unit(t, path)
	for k, want := range map[string]string{
		"DynamicUser": "yes", "ProtectSystem": "strict", "NoNewPrivileges": "yes", "ProtectHome": "yes",
		"PrivateDevices": "yes", "CapabilityBoundingSet": "", "KillSignal": "SIGTERM",
		"CacheDirectory": "packd", "Environment": "PACKD_CACHE_DIR=/var/cache/packd", "LogsDirectory": "packd", "ExecReload": "/bin/kill -HUP $MAINPID",
	} {
		if got, ok := u[k]; !ok || got != want {
			t.Errorf("%s=%q, want %q", k, got, want)
		}
	}
	if u["MemoryMax"] == "" {
		t.Error("no MemoryMax")
	}
	if stop, err := time.ParseDuration(strings.TrimSuffix(u["TimeoutStopSec"], "s") + "s"); err != nil || stop <= 8*time.Second {
		t.Errorf("TimeoutStopSec=%q: it must be longer than the 8 s drain", u["TimeoutStopSec"])
	}
	if _, ok := u["MemoryDenyWriteExecute"]; ok {
		t.Error("MemoryDenyWriteExecute would stop wazero's compiled code")
	}
	if !strings.HasPrefix(u["ExecStart"], "/usr/local/bin/packd serve ") {
		t.Errorf("ExecStart=%q", u["ExecStart"])
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is not installed: scripts/deps installs it (Debian: apt-get install systemd)")
	}
	// verify checks that ExecStart's binary exists: point it at a packd.
	dir := t.TempDir()
	packd := filepath.Join(dir, "packd")
	build := exec.Command("go", "build", "-o", packd, "github.com/kindgi/packd/cmd/packd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building packd: %v\n%s", err, out)
	}
	text, _ := os.ReadFile(path)
	local := filepath.Join(dir, "packd.service")
	_ = os.WriteFile(local, []byte(strings.ReplaceAll(string(text), "/usr/local/bin/packd", packd)), 0o644)
	if out, err := exec.Command(analyze, "verify", local).CombinedOutput(); err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
