package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTutorial runs every sh block of docs/writing-a-pack.md, in order, in
// a clean directory, with this packd first on PATH (and the serve step on
// a free port), and checks what the text says they print.
func TestTutorial(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("go is not on PATH: the tutorial needs it")
	}
	for _, tool := range []string{"curl", "clang", "npm", "node", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: the tutorial needs it (scripts/deps installs it)", tool)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "writing-a-pack.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 5 {
		t.Fatalf("%d sh blocks in the tutorial", len(blocks))
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for _, b := range blocks {
		script.WriteString(b[1])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	text := strings.ReplaceAll(script.String(), "8080", port)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", text)
	cmd.Dir = t.TempDir()
	// Not the environment of a make that runs this test: its jobserver
	// would make the tutorial's own make wait for tokens forever.
	cmd.Env = append(withoutMake(os.Environ()), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		// The tutorial commits a pack to clone it: an identity, whatever
		// the machine's git says.
		"GIT_AUTHOR_NAME=Tutorial", "GIT_AUTHOR_EMAIL=tutorial@example.com", "GIT_COMMITTER_NAME=Tutorial", "GIT_COMMITTER_EMAIL=tutorial@example.com")
	cmd.WaitDelay = 10 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // a server the script left behind
	}
	if err != nil {
		t.Fatalf("the tutorial failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"ok: pack hello-pack 0.1.0, 1 tool(s), 0 check(s)",
		`{"v":2,"kind":"result","output":{"greeting":"Hello, Ada!"}}`,
		`"code":"input-validation-failed"`,
		`{"v":2,"kind":"result","output":{"shouted":"HI HI"}}`,
		"RangeError: times must not be negative",
		`"params":{"additionalProperty":"tiems"}`,
		`{"v":2,"kind":"check-result","result":{"passed":false,"reason":"too short"}}`,
		`{"v":2,"kind":"check-result","result":{"passed":true}}`,
		`config failed validation: must NOT have additional properties`,
		`{"v":2,"kind":"result","output":{"greeting":"Hello, Grace!"}}`,
		`{"v":2,"kind":"check-result","result":{"passed":false,"reason":"empty"}}`,
		`{"v":2,"kind":"result","output":{"greeting":"Hello, Lin!"}}`,
		`{"v":2,"kind":"result","output":{"shouted":"HEY HEY"}}`,
		`"schemaPath":"#/properties/times/minimum","keyword":"minimum"`,
		`"message":"Handler for tool \"hello-ts.shout\" threw: RangeError: nothing to shout"`,
		// The stack names the line of the throw in src/pack.ts.
		`"stack":"RangeError: nothing to shout\n    at handler (src/pack.ts:`,
		// The type check stopped make at the file and line.
		"src/broken.ts(5,25): error TS2322: Type 'Promise<{ passed: number; }>' is not assignable to type 'CheckResult | Promise<CheckResult>'.",
		"make stopped at the type error",
		// Python: the scaffold's tests and replay, a tool added, a raise.
		"Ran 2 tests",
		`{"v":2,"kind":"result","output":{"greeting":"Hello, Guido!"}}`,
		`{"v":2,"kind":"result","output":{"shouted":"OLA OLA OLA"}}`,
		`"message":"Handler for tool \"hello-py.shout\" threw: ValueError: nothing to shout"`,
		`File \"tools/greet.py\", line 29, in shout\n    raise ValueError(\"nothing to shout\")`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the tutorial's output does not have %s:\n%s", want, out)
		}
	}
	// packd index wrote the checks' guardrail entries from the code.
	for _, c := range []struct{ index, want string }{
		{"hello-pack/index.json", `"action": {
        "on-violation": "halt"
      },
      "checkId": "hello-pack.checks.min-length",
      "checkModulePath": "hello-pack.wasm",
      "configSchema": {
        "additionalProperties": false,
        "properties": {
          "minLength": {
            "description": "The fewest characters an answer may have (default 1).",
            "type": "integer"
          }
        },
        "type": "object"
      },
      "id": "hello-pack.min-length",
      "kind": "zero-llm",
      "severity": "error"`},
		{"hello-c/index.json", `"checkId": "hello-c.checks.not-empty",`},
		{"hello-c/index.json", `"on-violation": "log-only"`},
	} {
		b, err := os.ReadFile(filepath.Join(cmd.Dir, c.index))
		if err != nil || !strings.Contains(string(b), c.want) {
			t.Errorf("%s lacks %s:\n%s", c.index, c.want, b)
		}
	}
	if n := strings.Count(string(out), `"output":{"greeting":"Hello, Ada!"}`); n != 4 {
		t.Errorf("greeted %d times (packd invoke, make record, over HTTP, then make record in TypeScript), want 4:\n%s", n, out)
	}
	// make test replayed the recorded example call: in Go after init and
	// after make record, in C, in TypeScript after init and in its fresh
	// clone, and in Python.
	if n := strings.Count(string(out), "1 of 1 records replayed identically"); n != 6 {
		t.Errorf("%d replays of the recorded example call, want 6:\n%s", n, out)
	}
}
