package main

// The black-box suite's harness: packd built once, started as a process
// with a random token on loopback, its record streams collected line by
// line, and HTTP helpers to drive it.

import (
	"bufio"
	"crypto/rand"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	binDir      string
	packdPath   string
	vcsRevision string // the VCS revision packd's build info names, if any
)

func buildBinary() int {
	var err error
	if binDir, err = os.MkdirTemp("", "packd-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	packdPath = filepath.Join(binDir, "packd")
	defer func() { vcsRevision = stamped(packdPath) }()
	// make test hands over the binary it built (the one the image holds).
	if given := os.Getenv("PACKD_BINARY"); given != "" {
		b, err := os.ReadFile(given)
		if err == nil {
			err = os.WriteFile(packdPath, b, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "PACKD_BINARY:", err)
			return 1
		}
		return 0
	}
	// With the VCS revision in its build info, as make build does; where
	// git cannot tell it (not a checkout, a tree of another owner), without.
	cmd := exec.Command("go", "build", "-buildvcs=auto", "-o", packdPath, ".")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err == nil {
		return 0
	}
	cmd = exec.Command("go", "build", "-buildvcs=false", "-o", packdPath, ".")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building packd:", err)
		return 1
	}
	return 0
}

// stamped is the VCS revision a binary's build info names ("" for none).
func stamped(path string) string {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}

// lines collects a stream's lines for waiting on them.
type lines struct {
	mu   sync.Mutex
	all  []string
	more chan struct{}
	done chan struct{} // closed at the stream's end
}

func collect(r io.Reader) *lines {
	l := &lines{more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

func (l *lines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

// waitFor returns the first line for which match holds, within timeout.
func (l *lines) waitFor(t *testing.T, timeout time.Duration, match func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, line := range l.snapshot() {
			if match(line) {
				return line
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("no matching line within %v; have:\n%s", timeout, strings.Join(l.snapshot(), "\n"))
		}
		select {
		case <-l.more:
		case <-time.After(min(left, 100*time.Millisecond)):
		}
	}
}

// record decodes a JSON record line into a map.
func record(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("not a JSON record: %q", line)
	}
	return m
}

// guestLine matches the guest-output record of a line of pack code output.
func guestLine(stream, text string) func(string) bool {
	return func(l string) bool {
		var r map[string]any
		return json.Unmarshal([]byte(l), &r) == nil && r["kind"] == "guest-output" && r["stream"] == stream && r["message"] == text
	}
}

func kindIs(kind string) func(string) bool {
	return func(line string) bool {
		var r map[string]any
		return json.Unmarshal([]byte(line), &r) == nil && r["kind"] == kind
	}
}

type served struct {
	cmd            *exec.Cmd
	base           string
	token          string
	stdout, stderr *lines
	exited         chan error
	index          string
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// start runs packd serve with the conformance environment plus env, and
// waits for its listening record. The process is killed when the test ends.
func start(t *testing.T, index string, env map[string]string, args ...string) *served {
	t.Helper()
	s := launch(t, index, env, args...)
	line := s.stderr.waitFor(t, 60*time.Second, func(l string) bool {
		return kindIs("listening")(l) || kindIs("boot-failed")(l) || kindIs("config-invalid")(l)
	})
	rec := record(t, line)
	if rec["kind"] != "listening" {
		t.Fatalf("did not start: %s", line)
	}
	s.base = fmt.Sprintf("http://127.0.0.1:%d", int(rec["port"].(float64)))
	return s
}

func launch(t *testing.T, index string, env map[string]string, args ...string) *served {
	t.Helper()
	s := &served{token: randomToken(), exited: make(chan error, 1), index: index}
	s.cmd = exec.Command(packdPath, append([]string{"--index", index, "--host", "127.0.0.1", "--cache-dir", cacheDir, "--metrics-addr", "127.0.0.1:0"}, args...)...)
	base := map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), "PORT": "0", tokenEnv: s.token + "\n"}
	for k, v := range env {
		base[k] = v
	}
	for k, v := range base {
		s.cmd.Env = append(s.cmd.Env, k+"="+v)
	}
	s.begin(t)
	return s
}

// begin starts s.cmd, reading its output, and kills it when the test ends.
func (s *served) begin(t *testing.T) {
	t.Helper()
	out, _ := s.cmd.StdoutPipe()
	errp, _ := s.cmd.StderrPipe()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.stdout, s.stderr = collect(out), collect(errp)
	// Wait closes the pipes, so it runs only once both streams are read to
	// their end (else the last lines of a process that exits are lost).
	go func() {
		<-s.stdout.done
		<-s.stderr.done
		s.exited <- s.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
		}
	})
}

// wait returns the exit code once the process ends.
func (s *served) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case err := <-s.exited:
		s.exited <- err
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(timeout):
		t.Fatalf("the process did not exit within %v", timeout)
		return -1
	}
}

type reply struct {
	status int
	header http.Header
	body   string
}

var client = &http.Client{Timeout: 60 * time.Second}

func (s *served) do(t *testing.T, method, path, body string, headers map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{resp.StatusCode, resp.Header, string(b)}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("%s %s: content-type %q", method, path, ct)
	}
	if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(b)) {
		t.Errorf("%s %s: content-length %q for %d bytes", method, path, cl, len(b))
	}
	return r
}

// hup sends SIGHUP (a reload) and answers the first record of one of
// kinds written after it.
func (s *served) hup(t *testing.T, kinds ...string) map[string]any {
	t.Helper()
	before := len(s.stderr.snapshot())
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	return record(t, s.stderr.waitFor(t, 60*time.Second, func(l string) bool {
		return slices.ContainsFunc(kinds, func(k string) bool { return kindIs(k)(l) }) && !slices.Contains(s.stderr.snapshot()[:before], l)
	}))
}

func (s *served) auth(extra ...string) map[string]string {
	h := map[string]string{"kindgi-pack-token": s.token, "content-type": "application/json"}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

func (s *served) invoke(t *testing.T, body string, extra ...string) reply {
	t.Helper()
	return s.do(t, "POST", "/v1/invoke", body, s.auth(extra...))
}

func invokeBody(id, version, input, ctx string) string {
	v := ""
	if version != "" {
		v = fmt.Sprintf(`,"version":%q`, version)
	}
	return fmt.Sprintf(`{"v":2,"kind":"invoke","tool":{"id":%q%s},"input":%s,"ctx":%s}`, id, v, input, ctx)
}

func expect(t *testing.T, r reply, status int, body string) {
	t.Helper()
	if r.status != status || withoutJSFrames(r.body) != body {
		t.Fatalf("got %d %s\nwant %d %s", r.status, r.body, status, body)
	}
}

// hostilePack writes an index of the named hostile fixtures as tools
// hostile.<name>; serve it with --module-root filepath.Dir(hostileIndex).
func hostilePack(t *testing.T, names ...string) string {
	t.Helper()
	var tools []string
	for _, n := range names {
		tools = append(tools, fmt.Sprintf(`{"id":"hostile.%s","version":"1.0.0","input":{"type":"object"},"output":{"type":"object"},"modulePath":"%s.wasm"}`, n, n))
	}
	idx := filepath.Join(t.TempDir(), "index.json")
	body := `{"v":1,"packId":"hostile-some","packVersion":"1.0.0","artifactVersion":"hostile-some-1","publishedAt":"2026-11-30T00:00:00.000Z",` +
		`"tools":[` + strings.Join(tools, ",") + `],"guardrails":[],"agents":[],"flows":[]}`
	if err := os.WriteFile(idx, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return idx
}

// scrape answers the service's /metrics (at the listening record's
// metricsPort).
func scrape(t *testing.T, s *served) string {
	t.Helper()
	rec := record(t, s.stderr.waitFor(t, 5*time.Second, kindIs("listening")))
	port, ok := rec["metricsPort"].(float64)
	if !ok {
		t.Fatalf("no metricsPort on the listening record: %v", rec)
	}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", int(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
