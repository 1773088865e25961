package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	pysdk "github.com/kindgi/packd/sdk/py"
)

// buildPyCmd makes a pack's module from its Python sources: packd's Python
// runtime with them in it, imported at _initialize.
func buildPyCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("packd build-py", flag.ContinueOnError)
	fset.SetOutput(stderr)
	out := fset.String("o", "", "the module to write (default: DIR.wasm, or the file's name with .wasm)")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: packd build-py [-o pack.wasm] DIR|FILE.py")
		fmt.Fprintln(stderr, "Every .py file under DIR is a module of the pack, named from DIR as from a sys.path entry (tests, hidden directories and a copy of packd_sdk left out); each whose name has no part starting with _ is imported when the module starts.")
		fset.PrintDefaults()
	}
	if code, ok := parseFlags(fset, args); !ok {
		return code
	}
	if fset.NArg() != 1 {
		fmt.Fprintln(stderr, "packd build-py: name one directory or .py file (packd build-py DIR)")
		return exitUsage
	}
	src := filepath.Clean(fset.Arg(0))
	dst := *out
	if dst == "" {
		dst = strings.TrimSuffix(src, ".py") + ".wasm"
	}
	if err := buildPy(src, dst, stderr); err != nil {
		fmt.Fprintln(stderr, "packd build-py:", err)
		return exitError
	}
	fmt.Fprintln(stdout, "wrote", dst)
	return exitOK
}

// buildPy makes the module dst of the Python sources at src (a directory
// or one file), with the standard library modules they import that the
// runtime does not carry; it tells warn of the imports packd's Python
// cannot satisfy.
func buildPy(src, dst string, warn io.Writer) error {
	sources, err := pySources(src)
	if err != nil {
		return err
	}
	needs, err := pysdk.NeedsOf(sources)
	if err != nil {
		return err
	}
	if len(needs.LeftOut) > 0 {
		fmt.Fprintf(warn, "packd build-py: warning: %s imports %s, which packd's Python leaves out (it needs files on disk, processes, a terminal or native code, or only runs as a program or tests code): importing it raises ImportError\n", src, strings.Join(needs.LeftOut, ", "))
	}
	if len(needs.Unknown) > 0 {
		fmt.Fprintf(warn, "packd build-py: warning: %s imports %s, neither in the pack nor in Python's standard library: put its sources in the pack (pure Python only), or importing it raises ImportError\n", src, strings.Join(needs.Unknown, ", "))
	}
	var main []string
	for _, s := range sources {
		if pyImported(s.Module) {
			main = append(main, s.Module)
		}
	}
	if len(main) == 0 {
		return fmt.Errorf("%s: no module to import (every name starts with _)", src)
	}
	runtime, err := pysdk.Runtime()
	if err != nil {
		return err
	}
	mod, err := pysdk.Module(runtime, main, sources)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return writeFileAtomic(dst, mod)
}

// pyImported: a module the runtime imports at start (the others are the
// pack's helpers, imported by what needs them).
func pyImported(module string) bool {
	for _, part := range strings.Split(module, ".") {
		if strings.HasPrefix(part, "_") {
			return false
		}
	}
	return true
}

// pySources reads the pack's modules: src itself when it is a file, else
// every .py file under it but tests (test_*.py, *_test.py, tests/),
// hidden directories, __pycache__, the packd_sdk/ and __init__.py of src
// itself, named
// by their paths from src, as from a sys.path entry (pkg/mod.py is
// pkg.mod; pkg/__init__.py is the package pkg), in the order of their
// names.
func pySources(src string) ([]pysdk.Source, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	var sources []pysdk.Source
	total := int64(0)
	add := func(path, rel string) error {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		if total += fi.Size(); total > pysdk.MaxBundle {
			return fmt.Errorf("%s: the sources are over the %d bytes a module takes", src, pysdk.MaxBundle)
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := strings.TrimSuffix(rel, ".py")
		pkg := false
		if strings.HasSuffix(name, "/__init__") {
			name, pkg = strings.TrimSuffix(name, "/__init__"), true
		}
		sources = append(sources, pysdk.Source{Module: strings.ReplaceAll(name, "/", "."), File: rel, Text: text, Package: pkg})
		return nil
	}
	if !fi.IsDir() {
		if filepath.Ext(src) != ".py" {
			return nil, fmt.Errorf("%s is not a .py file or a directory", src)
		}
		return sources, add(src, filepath.Base(src))
	}
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != src && (strings.HasPrefix(name, ".") || name == "__pycache__" || name == "tests") ||
				filepath.Dir(path) == src && name == "packd_sdk" { // the SDK packd init copies: the runtime has its own
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(name) != ".py" || strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py") ||
			name == "__init__.py" && filepath.Dir(path) == src {
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		return add(path, rel)
	})
	if err != nil {
		return nil, err
	}
	if len(sources) == 0 {
		return nil, errors.New(src + ": no .py files")
	}
	sort.Slice(sources, func(i, j int) bool { return sources[i].Module < sources[j].Module })
	return sources, nil
}
