package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The packages scripts/deps installs for a tool found on PATH (the ones
// found through a file may be on this machine or not).
var commandPackages = []string{"wabt", "prometheus", "clang", "lld", "podman", "valgrind", "systemd", "curl", "nodejs", "npm"}

// fakeBin is a PATH of its own: bash, dirname, go and make as this machine
// has them, and the given scripts (an id, an apt-get that logs its
// arguments). None of the tools scripts/deps looks for is on it.
func fakeBin(t *testing.T, fakes map[string]string) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is not on PATH")
	}
	dir := t.TempDir()
	for _, tool := range []string{"bash", "dirname", "go", "make"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s is not on PATH", tool)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!"+bash+"\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type result struct {
	code           int
	stdout, stderr string
}

// deps runs scripts/deps with only bin on PATH, and the Go module cache
// read-only through GOFLAGS (it must not need the network here).
func deps(t *testing.T, bin string, args ...string) result {
	t.Helper()
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "bash"), append([]string{"deps"}, args...)...)
	cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir(), "GOPROXY=off", "GOFLAGS=-mod=mod",
		"GOMODCACHE=" + strings.TrimSpace(string(modcache)), "GOCACHE=" + t.TempDir()}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("scripts/deps %v did not end within 2 minutes: %s", args, stderr.String())
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// wantsPackages: the line holds every package of a missing command, in
// the script's order.
func wantsPackages(t *testing.T, line string) {
	t.Helper()
	at := 0
	for _, p := range commandPackages {
		i := strings.Index(line[at:], " "+p)
		if i < 0 {
			t.Fatalf("%q does not name %s (after the packages before it)", line, p)
		}
		at += i + len(p) + 1
	}
}

func lineWith(t *testing.T, text, sub string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	t.Fatalf("no line with %q in:\n%s", sub, text)
	return ""
}

// TestDepsSaysTheCommandWhenItCannotInstall: a user who is not root and
// has no password-less sudo gets, at once, the exact apt-get command that
// installs every missing package, and exit 1; so does --check, and a
// machine without apt-get.
func TestDepsSaysTheCommandWhenItCannotInstall(t *testing.T) {
	for _, c := range []struct {
		name  string
		fakes map[string]string
		args  []string
		why   string
	}{
		{"not root, no sudo", map[string]string{"id": "echo 1000", "apt-get": "echo apt-get ran >&2; exit 1"}, nil, "needs root"},
		{"sudo asks for a password", map[string]string{"id": "echo 1000", "apt-get": "exit 1", "sudo": `[ "$1" = -n ] && exit 1; exec "$@"`}, nil, "needs root"},
		{"no apt-get", map[string]string{"id": "echo 0"}, nil, "has no apt-get"},
		{"--check", map[string]string{"id": "echo 0", "apt-get": "echo apt-get ran >&2; exit 1"}, []string{"--check"}, "missing Debian packages"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := deps(t, fakeBin(t, c.fakes), c.args...)
			if r.code != 1 || strings.Contains(r.stderr, "apt-get ran") {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			lineWith(t, r.stderr, c.why)
			wantsPackages(t, lineWith(t, r.stderr, "sudo apt-get update && sudo apt-get install -y --no-install-recommends"))
		})
	}
}

// TestDepsInstallsWhatIsMissing: as root, it runs apt-get update and
// install with every missing package, and still fails, naming them, when
// apt-get left them missing (here apt-get installs nothing).
func TestDepsInstallsWhatIsMissing(t *testing.T) {
	log := filepath.Join(t.TempDir(), "apt.log")
	bin := fakeBin(t, map[string]string{"id": "echo 0", "apt-get": `echo "$@" >>` + log})
	r := deps(t, bin)
	calls, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 2 || lines[0] != "update -qq" || !strings.HasPrefix(lines[1], "install -y -qq --no-install-recommends") {
		t.Fatalf("apt-get calls: %q", lines)
	}
	wantsPackages(t, " "+strings.TrimPrefix(lines[1], "install -y -qq --no-install-recommends"))
	if r.code != 1 {
		t.Fatalf("exit %d with nothing installed\nstderr: %s", r.code, r.stderr)
	}
	wantsPackages(t, lineWith(t, r.stderr, "still missing"))
}

// TestDepsPassesWhenEverythingIsThere: with every command it looks for on
// PATH (stand-ins) and the files present, it installs nothing and says so.
func TestDepsPassesWhenEverythingIsThere(t *testing.T) {
	fakes := map[string]string{"id": "echo 1000", "apt-get": "echo apt-get ran >&2; exit 1"}
	for _, c := range []string{"wat2wasm", "promtool", "clang", "wasm-ld", "podman", "valgrind", "systemd-analyze", "curl", "node", "npm"} {
		fakes[c] = "exit 0"
	}
	r := deps(t, fakeBin(t, fakes), "--check")
	if r.code == 0 {
		if !strings.Contains(r.stdout, "everything make test needs is installed") {
			t.Fatalf("stdout: %s", r.stdout)
		}
		return
	}
	// Only the packages found by file may be missing on this machine.
	line := lineWith(t, r.stderr, "missing Debian packages:")
	for _, p := range commandPackages {
		if strings.Contains(line, " "+p+" ") || strings.HasSuffix(line, " "+p) {
			t.Fatalf("%s is reported missing with its command on PATH: %s", p, line)
		}
	}
}
