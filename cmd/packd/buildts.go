package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// kindgiFolders are the folders of a kindgi pack that hold pack code
// packd runs: tools and guardrails (agents and flows are the runtime's
// data). kindgi finds a pack's definitions in them by file: each
// index.ts of a subfolder (tools/greet/index.ts) or each .ts file in the
// folder itself (tools/greet.ts).
var kindgiFolders = []string{"tools", "guardrails"}

// maxDiscovered bounds the files build-ts imports: a pack is tens of
// definitions, not a tree of thousands.
const maxDiscovered = 2000

// buildTSCmd builds a kindgi-shaped TypeScript pack, one definition per
// file under tools/ and guardrails/, without an entry file of its own:
// it writes one that imports every definition and registers what the
// modules default-export (guardrail objects), bundles it with the pack's
// own esbuild, and makes the module as build-js does.
func buildTSCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("packd build-ts", flag.ContinueOnError)
	fset.SetOutput(stderr)
	out := fset.String("o", "", "the module to write (default: DIR/pack.wasm)")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: packd build-ts [-o pack.wasm] DIR\n\nBuilds a kindgi-shaped TypeScript pack: every tools/*/index.ts, tools/*.ts,\nguardrails/*/index.ts and guardrails/*.ts of DIR, bundled with DIR's esbuild.")
		fset.PrintDefaults()
	}
	if code, ok := parseFlags(fset, args); !ok {
		return code
	}
	if fset.NArg() != 1 {
		fmt.Fprintln(stderr, "packd build-ts: name one pack directory (packd build-ts .)")
		return exitUsage
	}
	dir := fset.Arg(0)
	dst := *out
	if dst == "" {
		dst = filepath.Join(dir, "pack.wasm")
	}
	files, err := discoverKindgi(dir)
	if err != nil {
		fmt.Fprintln(stderr, "packd build-ts:", err)
		return exitError
	}
	entry, err := writeKindgiEntry(dir, files)
	if err != nil {
		fmt.Fprintln(stderr, "packd build-ts:", err)
		return exitError
	}
	if err := typecheckAsPackd(dir, files, stderr); err != nil {
		fmt.Fprintln(stderr, "packd build-ts:", err)
		return exitError
	}
	esbuild, err := filepath.Abs(filepath.Join(dir, "node_modules", ".bin", "esbuild"))
	if err == nil {
		_, err = os.Stat(esbuild)
	}
	if err != nil {
		fmt.Fprintf(stderr, "packd build-ts: the pack has no esbuild (in %s: npm install --save-dev esbuild)\n", dir)
		return exitError
	}
	bundle := filepath.Join("build", "pack.js")
	build := exec.Command(esbuild, append([]string{entry}, esbuildFlags(bundle)...)...)
	build.Dir, build.Stdout, build.Stderr = dir, stderr, stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(stderr, "packd build-ts: bundling %s: %v\n", dir, err)
		return exitError
	}
	if err := buildJS(filepath.Join(dir, bundle), dst, dir); err != nil {
		fmt.Fprintln(stderr, "packd build-ts:", err)
		return exitError
	}
	fmt.Fprintf(stdout, "wrote %s (%d files)\n", dst, len(files))
	return exitOK
}

// typecheckAsPackd type-checks the pack's definitions, and what they
// import, as packd runs them: under the pack's own tsconfig.json, but with
// packd's globals (the SDK's globals.d.ts, and the ES and DOM libraries)
// in place of Node's types, so a use of what packd's runtime lacks
// (require, setImmediate, __dirname) stops the build at its file and
// line, not a call. A pack without TypeScript (no node_modules/.bin/tsc)
// or whose SDK is not packd's is built unchecked, which it says.
func typecheckAsPackd(dir string, files []string, stderr io.Writer) error {
	tsc := filepath.Join(dir, "node_modules", ".bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		fmt.Fprintln(stderr, "packd build-ts: not type-checked: the pack has no TypeScript (npm install --save-dev typescript)")
		return nil
	}
	var globals string
	for _, sdk := range []string{"@packd/sdk", "@kindgi/sdk"} {
		g := filepath.Join("node_modules", sdk, "globals.d.ts")
		if _, err := os.Stat(filepath.Join(dir, g)); err == nil {
			globals = g
			break
		}
	}
	if globals == "" {
		fmt.Fprintln(stderr, "packd build-ts: not type-checked against packd's globals: the pack's SDK is not packd's (no globals.d.ts)")
		return nil
	}
	config := map[string]any{
		"compilerOptions": map[string]any{"noEmit": true, "types": []string{}, "lib": []string{"ES2022", "DOM"}, "skipLibCheck": true},
		"include":         []string{},
	}
	if _, err := os.Stat(filepath.Join(dir, "tsconfig.json")); err == nil {
		config["extends"] = "../tsconfig.json"
	}
	list := []string{"../" + filepath.ToSlash(globals)}
	for _, f := range files {
		list = append(list, "../"+f)
	}
	config["files"] = list
	b, _ := json.MarshalIndent(config, "", "  ")
	name := filepath.Join("build", "tsconfig.packd.json")
	if err := writeFileAtomic(filepath.Join(dir, name), b); err != nil {
		return err
	}
	abs, err := filepath.Abs(tsc)
	if err != nil {
		return err
	}
	check := exec.Command(abs, "-p", name)
	check.Dir, check.Stdout, check.Stderr = dir, stderr, stderr
	if err := check.Run(); err != nil {
		return fmt.Errorf("the pack's code does not type-check as packd runs it (Node's types left out; abi/GUEST-ABI.md lists what a pack has): %v", err)
	}
	return nil
}

// discoverKindgi lists a kindgi pack's definition files, relative to dir,
// in a stable order.
func discoverKindgi(dir string) ([]string, error) {
	var files []string
	for _, folder := range kindgiFolders {
		root := filepath.Join(dir, folder)
		if _, err := os.Stat(root); os.IsNotExist(err) {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			depth := strings.Count(rel, string(filepath.Separator))
			if d.IsDir() {
				if p != root && (depth > 0 || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
					return fs.SkipDir
				}
				return nil
			}
			name := d.Name()
			if !isDefinitionFile(name) {
				return nil
			}
			if depth == 0 || name == "index.ts" || name == "index.mts" {
				files = append(files, filepath.ToSlash(filepath.Join(folder, rel)))
			}
			if len(files) > maxDiscovered {
				return fmt.Errorf("more than %d definition files under %s", maxDiscovered, folder)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s has no tools/*/index.ts, tools/*.ts, guardrails/*/index.ts or guardrails/*.ts", dir)
	}
	slices.Sort(files)
	return files, nil
}

// isDefinitionFile is a TypeScript source that is not a test or a
// declaration.
func isDefinitionFile(name string) bool {
	if !strings.HasSuffix(name, ".ts") && !strings.HasSuffix(name, ".mts") {
		return false
	}
	for _, not := range []string{".d.ts", ".d.mts", ".test.ts", ".spec.ts", ".test.mts", ".spec.mts"} {
		if strings.HasSuffix(name, not) {
			return false
		}
	}
	return true
}

// writeKindgiEntry writes build/entry.ts, which imports every file and
// registers their default exports, and answers its path relative to dir.
// The SDK is the one the pack installed: @packd/sdk, or the same package
// installed as @kindgi/sdk.
func writeKindgiEntry(dir string, files []string) (string, error) {
	sdk := "@packd/sdk/define"
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@packd", "sdk")); err != nil {
		sdk = "@kindgi/sdk/define"
	}
	var b strings.Builder
	b.WriteString("// Written by packd build-ts: every definition of the pack, and its\n// default exports registered (guardrail objects). Not to be edited.\n")
	fmt.Fprintf(&b, "import { registerModules } from %s;\n", strconv.Quote(sdk))
	for i, f := range files {
		fmt.Fprintf(&b, "import * as m%d from %s;\n", i, strconv.Quote("../"+f))
	}
	b.WriteString("registerModules([")
	for i := range files {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "m%d", i)
	}
	b.WriteString("]);\n")
	if err := os.MkdirAll(filepath.Join(dir, "build"), 0o755); err != nil {
		return "", err
	}
	entry := filepath.Join("build", "entry.ts")
	return entry, writeFileAtomic(filepath.Join(dir, entry), []byte(b.String()))
}
