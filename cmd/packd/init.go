package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/kindgi/packd/abi/guest"
	csdk "github.com/kindgi/packd/sdk/c"
)

// initCmd scaffolds a pack in a new directory: code with one tool, a test
// of it, a Makefile, the Go SDK (a copy, until it is published), and, when
// Go is installed, the module built and its index written by packd index,
// so that packd check and packd invoke work with no edits.
func initCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("packd init", flag.ContinueOnError)
	fset.SetOutput(stderr)
	lang := fset.String("lang", "go", "the pack's language: "+languageNames(`"%s" (%s)`, ", "))
	id := fset.String("pack-id", "", "the pack's id (default: the directory's name)")
	fset.Usage = func() {
		fmt.Fprintf(stderr, "usage: packd init [--lang %s] [--pack-id ID] DIR\n", languageNames("%[1]s", "|"))
		fset.PrintDefaults()
	}
	if code, ok := parseFlags(fset, args); !ok {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "packd init: "+format+"\n", a...)
		return code
	}
	if fset.NArg() != 1 {
		return fail(exitUsage, "name one directory to create (packd init DIR)")
	}
	dir := fset.Arg(0)
	language, ok := languageNamed(*lang)
	if !ok {
		return fail(exitUsage, "--lang %q: packd init writes %s packs; for other languages see abi/GUEST-ABI.md", *lang, languageNames("%[2]s (--lang %[1]s)", ", "))
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fail(exitUsage, "%s exists and is not empty: name a new directory", dir)
	}
	pack := *id
	if pack == "" {
		abs, _ := filepath.Abs(dir)
		pack = packName(filepath.Base(abs))
	}
	if !packIDPattern.MatchString(pack) {
		return fail(exitUsage, "pack id %q: use lowercase letters, digits, '-' and '.', starting with a letter (--pack-id)", pack)
	}
	files := map[string]string{}
	for name, tmpl := range language.templates {
		var b strings.Builder
		if err := template.Must(template.New(name).Parse(tmpl)).Execute(&b, map[string]string{"Pack": pack, "Name": wasmName(pack)}); err != nil {
			return fail(exitError, "%v", err)
		}
		files[strings.ReplaceAll(name, "NAME", wasmName(pack))] = b.String()
	}
	return language.scaffold(dir, pack, files, stdout, stderr)
}

// writeWithSDK writes a new pack's files, with a copy of the SDK's files
// (but those skip names) under at, and says so; false when it could not,
// said on stderr.
func writeWithSDK(dir, pack, lang string, files map[string]string, sdk fs.FS, at string, skip func(string) bool, stderr io.Writer) bool {
	if err := fs.WalkDir(sdk, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || skip != nil && skip(p) {
			return err
		}
		b, err := fs.ReadFile(sdk, p)
		files[path.Join(at, p)] = string(b)
		return err
	}); err != nil {
		fmt.Fprintf(stderr, "packd init: copying the SDK: %v\n", err)
		return false
	}
	if err := writeFiles(dir, files); err != nil {
		fmt.Fprintf(stderr, "packd init: %v\n", err)
		return false
	}
	fmt.Fprintf(stderr, "packd init: wrote a %s pack %q in %s\n", lang, pack, dir)
	return true
}

// initGo writes a Go pack with a copy of the Go SDK, builds it when Go
// is installed, and writes its index.
func initGo(dir, pack string, files map[string]string, stdout, stderr io.Writer) int {
	if !writeWithSDK(dir, pack, "Go", files, guest.Source, "sdk", func(p string) bool { return strings.HasSuffix(p, "_test.go") }, stderr) {
		return exitError
	}

	goTool, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintf(stderr, "packd init: Go is not installed: build the module with make (Go 1.24 or later), then run make index\n")
		return exitOK
	}
	build := exec.Command(goTool, "build", "-buildmode=c-shared", "-o", wasmName(pack)+".wasm", ".")
	build.Dir, build.Env = dir, append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(stderr, "packd init: building the module (in %s: make build): %v\n", dir, err)
		return exitError
	}
	return writeIndex(dir, pack, stdout, stderr, "make test")
}

// writeFiles writes a new pack's files under dir.
func writeFiles(dir string, files map[string]string) error {
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// initC writes a C pack, builds it with clang when it is installed, and
// writes its index.
func initC(dir, pack string, files map[string]string, stdout, stderr io.Writer) int {
	files["kindgi.h"] = string(csdk.Header)
	if err := writeFiles(dir, files); err != nil {
		fmt.Fprintf(stderr, "packd init: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stderr, "packd init: wrote a C pack %q in %s\n", pack, dir)
	clang, err := exec.LookPath("clang")
	if err != nil {
		fmt.Fprintln(stderr, "packd init: clang is not installed (Debian: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32): then run make")
		return exitOK
	}
	name := wasmName(pack)
	build := exec.Command(clang, "--target=wasm32-wasi", "-mexec-model=reactor", "-mbulk-memory", "-O2", "-Wall", "-o", name+".wasm", name+".c")
	build.Dir, build.Stdout, build.Stderr = dir, stderr, stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(stderr, "packd init: building the module (in %s: make build): %v\n", dir, err)
		return exitError
	}
	return writeIndex(dir, pack, stdout, stderr, "make test")
}

// writeIndex writes a new pack's index with packd index and says what to
// try next.
func writeIndex(dir, pack string, stdout, stderr io.Writer, test string) int {
	index := filepath.Join(dir, "index.json")
	if code := indexCmd([]string{"--index", index, "--pack-id", pack, "--pack-version", "0.1.0", filepath.Join(dir, wasmName(pack)+".wasm")}, stdout, stderr); code != exitOK {
		return code
	}
	// The example call, recorded: make test replays it (the template's
	// record target makes it anew).
	records := filepath.Join(dir, "records", "example")
	if code := invokeCmd([]string{"--index", index, "--tool", pack + ".greet", "--input", `{"name":"Ada"}`, "--record", records}, strings.NewReader(""), io.Discard, io.Discard); code != exitOK {
		fmt.Fprintf(stderr, "packd init: recording the example call failed (in %s: make record)\n", dir)
		return code
	}
	fmt.Fprintf(stdout, "Next:\n  cd %s\n  packd check --index index.json\n  packd invoke --index index.json --tool %s.greet --input '{\"name\":\"Ada\"}'\n  %s\n", dir, pack, test)
	return exitOK
}

var packIDPattern = regexp.MustCompile(`^[a-z][a-z0-9.-]*$`)

// packName makes a pack id of a directory name: lowercase, other
// characters as '-'.
func packName(base string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

// wasmName is the module's file name (without .wasm): the pack id's last
// part.
func wasmName(pack string) string { return pack[strings.LastIndex(pack, ".")+1:] }

// goPackFiles are a new Go pack's files ({{.Pack}}: its id, {{.Name}}: its
// module's name).
var goPackFiles = map[string]string{
	"go.mod": `module example.com/{{.Pack}}

go 1.24

require github.com/kindgi/packd/abi/guest v0.0.0

// The packd Go SDK, copied here by packd init until it is published.
replace github.com/kindgi/packd/abi/guest => ./sdk
`,
	"main.go": `// Command {{.Name}} is the {{.Pack}} pack: its tools, served by packd.
package main

import "github.com/kindgi/packd/abi/guest"

// greetIn is the tool's input; packd index derives its JSON Schema from
// this type (the desc tag becomes a description).
type greetIn struct {
	Name string ` + "`" + `json:"name" desc:"Who to greet."` + "`" + `
}

type greetOut struct {
	Greeting string ` + "`" + `json:"greeting"` + "`" + `
}

func init() {
	guest.TypedTool("{{.Pack}}.greet", func(in greetIn, ctx *guest.Context) (greetOut, error) {
		return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
	}, guest.Version("1.0.0"), guest.Description("Greets someone."))
}

func main() {}
`,
	"main_test.go": `package main

import (
	"testing"

	"github.com/kindgi/packd/abi/guest"
)

// The tool runs natively (go test), with a request built for it.
func TestGreet(t *testing.T) {
	out, err := guest.Invoke("{{.Pack}}.greet", map[string]any{"name": "Ada"}, nil)
	if err != nil || string(out) != ` + "`" + `{"greeting":"Hello, Ada!"}` + "`" + ` {
		t.Fatalf("%s %v", out, err)
	}
}
`,
	"Makefile": `# make: build the module and write index.json; make test: the native tests,
# then every recorded call in records/ replayed on the module (packd replay:
# the same output and fuel), built first (a clone lacks the module: it is
# not committed). make record records the example call anew; a call
# recorded by packd serve --record DIR joins records/ the same way.
# Commit records/: each record is a test.
# PACKD is packd's path when it is not on PATH (make PACKD=/path/to/packd).
PACKD ?= packd

all: build index

build:
	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o {{.Name}}.wasm .

index: build
	$(PACKD) index --index index.json {{.Name}}.wasm

record: index
	rm -rf records/example
	$(PACKD) invoke --index index.json --tool {{.Pack}}.greet --input '{"name":"Ada"}' --record records/example

test: index
	go test ./...
	$(PACKD) replay --index index.json records

.PHONY: all build index record test
`,
	".gitignore": "*.wasm\n",
}

// cPackFiles are a new C pack's files (NAME in a file name: the module's
// name).
var cPackFiles = map[string]string{
	"NAME.c": `/* {{.Name}}: the {{.Pack}} pack, in C with packd's kindgi.h. */
#define KINDGI_IMPLEMENTATION
#include "kindgi.h"

static int greet(kindgi_json input, kindgi_json ctx, kindgi_out *out) {
    (void)ctx;
    size_t n;
    char *name = kindgi_string(kindgi_get(input, "name"), &n);
    if (!name) return kindgi_throw(out, "TypeError", "name is not a string");
    char *greeting = malloc(n + 8);
    memcpy(greeting, "Hello, ", 7);
    memcpy(greeting + 7, name, n);
    greeting[n + 7] = '!';
    kindgi_begin_object(out);
    kindgi_key(out, "greeting");
    kindgi_write_string(out, greeting, n + 8);
    kindgi_end_object(out);
    free(greeting);
    free(name);
    return KINDGI_OK;
}

/* The pack's tools, with what packd index writes into index.json. */
const kindgi_tool kindgi_tools[] = {
    {"{{.Pack}}.greet", greet, "1.0.0", "Greets someone.",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":\"Who to greet.\"}},\"required\":[\"name\"]}",
     "{\"type\":\"object\",\"properties\":{\"greeting\":{\"type\":\"string\"}},\"required\":[\"greeting\"]}"},
    {0},
};
const kindgi_check kindgi_checks[] = { {0} };
`,
	"NAME_test.c": `/* The pack's handlers, run natively (make test). */
#include "{{.Name}}.c"

int main(void) {
    const char *input = "{\"name\":\"Ada\"}";
    kindgi_out out = {0};
    out.first = 1;
    int status = greet((kindgi_json){input, strlen(input)}, (kindgi_json){0, 0}, &out);
    const char *want = "{\"greeting\":\"Hello, Ada!\"}";
    if (status != KINDGI_OK || out.n != strlen(want) || memcmp(out.b, want, out.n)) {
        fprintf(stderr, "greet wrote %.*s, want %s\n", (int)out.n, out.b, want);
        return 1;
    }
    printf("ok\n");
    return 0;
}
`,
	"Makefile": `# make: build the module and write index.json; make test: the native tests,
# then every recorded call in records/ replayed on the module (packd replay:
# the same output and fuel), built first (a clone lacks the module: it is
# not committed). make record records the example call anew; a call
# recorded by packd serve --record DIR joins records/ the same way.
# Commit records/: each record is a test.
# Needs Debian's clang, lld, wasi-libc and libclang-rt-14-dev-wasm32.
# PACKD is packd's path when it is not on PATH (make PACKD=/path/to/packd).
PACKD ?= packd
CLANG ?= clang

all: build index

build:
	$(CLANG) --target=wasm32-wasi -mexec-model=reactor -mbulk-memory -O2 -Wall -o {{.Name}}.wasm {{.Name}}.c

index: build
	$(PACKD) index --index index.json {{.Name}}.wasm

record: index
	rm -rf records/example
	$(PACKD) invoke --index index.json --tool {{.Pack}}.greet --input '{"name":"Ada"}' --record records/example

test: index
	$(CLANG) -Wall -o {{.Name}}_test {{.Name}}_test.c && ./{{.Name}}_test
	$(PACKD) replay --index index.json records

.PHONY: all build index record test
`,
	".gitignore": "*.wasm\n*_test\n",
}
