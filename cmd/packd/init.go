package main

import (
	"errors"
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
)

// initCmd scaffolds a pack in a new directory: code with one tool, a test
// of it, a Makefile, the Go SDK (a copy, until it is published), and, when
// Go is installed, the module built and its index written by packd index,
// so that packd check and packd invoke work with no edits.
func initCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("packd init", flag.ContinueOnError)
	fset.SetOutput(stderr)
	lang := fset.String("lang", "go", `the pack's language: "go"`)
	id := fset.String("pack-id", "", "the pack's id (default: the directory's name)")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: packd init [--lang go] [--pack-id ID] DIR")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "packd init: "+format+"\n", a...)
		return code
	}
	if fset.NArg() != 1 {
		return fail(exitUsage, "name one directory to create (packd init DIR)")
	}
	dir := fset.Arg(0)
	if *lang != "go" {
		return fail(exitUsage, "--lang %q: packd init writes Go packs (--lang go); for other languages see abi/GUEST-ABI.md", *lang)
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
	for name, tmpl := range goPackFiles {
		var b strings.Builder
		if err := template.Must(template.New(name).Parse(tmpl)).Execute(&b, map[string]string{"Pack": pack, "Name": wasmName(pack)}); err != nil {
			return fail(exitError, "%v", err)
		}
		files[name] = b.String()
	}
	if err := fs.WalkDir(guest.Source, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := guest.Source.ReadFile(p)
		files[path.Join("sdk", p)] = string(b)
		return err
	}); err != nil {
		return fail(exitError, "copying the SDK: %v", err)
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fail(exitError, "%v", err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return fail(exitError, "%v", err)
		}
	}
	fmt.Fprintf(stderr, "packd init: wrote a Go pack %q in %s\n", pack, dir)

	goTool, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintf(stderr, "packd init: Go is not installed: build the module with make (Go 1.24 or later), then run make index\n")
		return exitOK
	}
	build := exec.Command(goTool, "build", "-buildmode=c-shared", "-o", wasmName(pack)+".wasm", ".")
	build.Dir, build.Env = dir, append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		return fail(exitError, "building the module (in %s: make build): %v", dir, err)
	}
	index := filepath.Join(dir, "index.json")
	if code := indexCmd([]string{"--index", index, "--pack-id", pack, "--pack-version", "0.1.0", filepath.Join(dir, wasmName(pack)+".wasm")}, stdout, stderr); code != exitOK {
		return code
	}
	fmt.Fprintf(stdout, "Next:\n  cd %s\n  packd check --index index.json\n  packd invoke --index index.json --tool %s.greet --input '{\"name\":\"Ada\"}'\n  go test ./...\n", dir, pack)
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
	"Makefile": `# make: build the module and write index.json; make test: the native tests.
# PACKD is packd's path when it is not on PATH (make PACKD=/path/to/packd).
PACKD ?= packd

all: build index

build:
	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o {{.Name}}.wasm .

index: build
	$(PACKD) index --index index.json {{.Name}}.wasm

test:
	go test ./...

.PHONY: all build index test
`,
	".gitignore": "*.wasm\n",
}
