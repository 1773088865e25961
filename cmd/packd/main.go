// Command packd is a pack service that runs pack code compiled to
// WebAssembly. Subcommands:
//
//	packd [serve] [--index I] [--module-root R] [--host H]
//	                           serve the pack over HTTP (Pack protocol v2)
//	packd invoke --index I --tool ID [--version V] --input JSON|@file [--ctx JSON]
//	packd invoke --index I --check ID --config JSON|@file --trace JSON|@file
//	packd check --index I      load and compile everything, list every problem
//	packd init DIR [--lang go|c|ts|py] scaffold a pack that builds and answers
//	packd index --index I [module.wasm ...]
//	                           write the index from what the modules describe
//	packd replay --index I RECORD|DIR ...   re-run recorded calls offline
//	packd dev [serve flags] DIR  serve a pack, rebuilding and reloading it as it changes
//	packd mcp [--index I]      serve the pack's tools to one MCP client over stdio
//	packd build-js [-o pack.wasm] bundle.js   a pack's module from its bundled JavaScript
//	packd build-ts [-o pack.wasm] DIR         a kindgi-shaped TypeScript pack's module
//	packd build-py [-o pack.wasm] DIR|FILE.py a Python pack's module
//	packd version
//
// invoke prints the response message on stdout and exits 0 on a result, 1 on
// an error message, 2 on a usage error. Pack code's stdout and stderr lines
// go to packd's stderr, so stdout holds exactly the response.
//
// The command is the application's top layer: serve runs server.Start (a
// service.Service behind its HTTP face), invoke calls service.Service.Call
// once, replay uses package replay; the languages a pack may be written in
// are one table (languages.go) that init, the build commands and the docs
// use.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=..."; else
// versionString reads the build info.
var version = ""

// versionString is packd's version: the one set at build time, else the
// module's version and the VCS revision it was built from (with "+dirty"
// when the tree had changes), as the Go toolchain records them.
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build info)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" || strings.Contains(v, rev) { // a pseudo-version names it
		return v
	}
	return fmt.Sprintf("%s (%s%s, %s)", v, rev, dirty, at)
}

const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" && args[0] != "--version" {
		return serveCmd(args, stdout, stderr)
	}
	switch args[0] {
	case "serve":
		return serveCmd(args[1:], stdout, stderr)
	case "invoke":
		return invokeCmd(args[1:], stdin, stdout, stderr)
	case "check":
		return checkCmd(args[1:], stdout, stderr)
	case "index":
		return indexCmd(args[1:], stdout, stderr)
	case "init":
		return initCmd(args[1:], stdout, stderr)
	case "build-js":
		return buildJSCmd(args[1:], stdout, stderr)
	case "build-ts":
		return buildTSCmd(args[1:], stdout, stderr)
	case "build-py":
		return buildPyCmd(args[1:], stdout, stderr)
	case "dev":
		return devCmd(args[1:], stdout, stderr)
	case "replay":
		return replayCmd(args[1:], stdout, stderr)
	case "keygen":
		return keygenCmd(args[1:], stdout, stderr)
	case "sign":
		return signCmd(args[1:], stdout, stderr)
	case "push":
		return pushCmd(args[1:], stdout, stderr)
	case "mcp":
		return mcpCmd(args[1:], stdin, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "packd", versionString())
		return exitOK
	case "help", "-h", "--help":
		usage(stdout)
		fmt.Fprintln(stdout)
		serveUsage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "packd: unknown command %q\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  packd [serve] [--index I] [--module-root R] [--host H]   (env: KINDGI_PACK_SERVICE_TOKEN, PORT, ...)
  packd invoke --index I [--module-root R] --tool ID [--version V] --input JSON|@file [--ctx JSON|@file]
  packd invoke --index I [--module-root R] --check ID --config JSON|@file --trace JSON|@file
  packd check --index I [--module-root R]
  packd init DIR [--lang go|c|ts|py]                       scaffold a pack that builds and answers
  packd index --index I [--pack-id ID] [module.wasm ...]   write the index from the modules
  packd keygen --out NAME                                  a signing key pair: NAME.key, NAME.pub
  packd sign --key NAME.key --index I                      sign the index (I.sig); serve with --trust NAME.pub
  packd push --index I oci://registry/repo:tag             publish the pack to a registry; serve with --index oci://...
  packd build-js [-o pack.wasm] bundle.js                  a pack's module from its bundled JavaScript
  packd build-ts [-o pack.wasm] DIR                        a kindgi-shaped TypeScript pack's module (tools/, guardrails/)
  packd build-py [-o pack.wasm] DIR|FILE.py                a Python pack's module (CPython 3.11)
  packd dev [serve flags] DIR                              serve a pack, rebuilding and reloading it as it changes
  packd mcp [--index I] [serve flags]                      serve the pack's tools to one MCP client over stdio
  packd replay [--index I | --module M] RECORD|DIR ...     re-run recorded calls offline (serve --record): same output and fuel?
  packd version
Run "packd serve -h", "packd invoke -h" or "packd check -h" for every flag.
`)
}

// parseFlags parses a command's flags; ok is false when the command is to
// exit at once with code: 0 for -h or --help (the usage was printed), 2
// for any other bad flag, as every command has it.
//
// Flags may come after the command's other arguments too (packd init DIR
// --lang ts, as its usage shows it); an unknown flag is answered with the
// closest one the command has.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	switch err := fs.Parse(interspersed(fs, args)); {
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	case err != nil:
		if name, found := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); found {
			if near := closestFlag(fs, strings.TrimPrefix(name, "-")); near != "" {
				fmt.Fprintf(fs.Output(), "did you mean --%s?\n", near)
			}
		}
		return exitUsage, false
	}
	return 0, true
}

// interspersed puts a command line's flags before its other arguments,
// which the flag package stops at: a flag's value stays with it, "--"
// ends the flags as before.
func interspersed(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	if len(rest) == 0 {
		return flags
	}
	return append(append(flags, "--"), rest...)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// closestFlag is the command's flag nearest to name (at most two edits
// away, or one it begins), or "".
func closestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		if strings.HasPrefix(f.Name, name) && len(name) >= 3 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance of two strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
