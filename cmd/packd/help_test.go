package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryCommandsHelpExitsZero: -h and --help print a command's usage
// and exit 0 for every command alike (before, check, invoke and replay
// exited 2 on -h), and an unknown flag exits 2 (serve reports it
// as a config-invalid record, exit 1, as every config problem).
func TestEveryCommandsHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"serve", "dev", "check", "invoke", "replay", "index", "init", "build-js", "keygen", "sign"} {
		for _, flag := range []string{"-h", "--help"} {
			var stdout, stderr bytes.Buffer
			if code := run([]string{cmd, flag}, strings.NewReader(""), &stdout, &stderr); code != exitOK || stdout.Len()+stderr.Len() == 0 {
				t.Errorf("packd %s %s: exit %d, %d bytes of usage", cmd, flag, code, stdout.Len()+stderr.Len())
			}
		}
		want := exitUsage
		if cmd == "serve" {
			want = 1
		}
		var out bytes.Buffer
		if code := run([]string{cmd, "--no-such-flag"}, strings.NewReader(""), &out, &out); code != want {
			t.Errorf("packd %s --no-such-flag: exit %d, want %d", cmd, code, want)
		}
	}
}

// TestEveryLanguageIsDocumented: every language of packd init's table is
// scaffolded by name (an unknown one is refused, naming them all), and
// docs/writing-a-pack.md shows it (Go is the default, without --lang).
func TestEveryLanguageIsDocumented(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "writing-a-pack.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run([]string{"init", "--lang", "cobol", t.TempDir()}, strings.NewReader(""), &out, &out); code != exitUsage {
		t.Fatalf("an unknown language: exit %d", code)
	}
	for _, l := range languages {
		if !strings.Contains(out.String(), "--lang "+l.flag) {
			t.Errorf("the refusal of an unknown language does not name --lang %s: %s", l.flag, out.String())
		}
		if l.flag != "go" && !strings.Contains(string(guide), "packd init --lang "+l.flag) {
			t.Errorf("docs/writing-a-pack.md does not show packd init --lang %s", l.flag)
		}
	}
}
