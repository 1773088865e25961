package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	jssdk "github.com/kindgi/packd/sdk/js"
)

// buildJSCmd makes a pack's module from its bundled JavaScript (one file,
// as esbuild writes it with --bundle): packd's JavaScript runtime with the
// bundle in it, evaluated at _initialize.
func buildJSCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("packd build-js", flag.ContinueOnError)
	fset.SetOutput(stderr)
	out := fset.String("o", "", "the module to write (default: the bundle's name with .wasm)")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: packd build-js [-o pack.wasm] bundle.js")
		fset.PrintDefaults()
	}
	if code, ok := parseFlags(fset, args); !ok {
		return code
	}
	if fset.NArg() != 1 {
		fmt.Fprintln(stderr, "packd build-js: name one bundle (packd build-js bundle.js)")
		return exitUsage
	}
	src := fset.Arg(0)
	dst := *out
	if dst == "" {
		dst = src[:len(src)-len(filepath.Ext(src))] + ".wasm"
	}
	if err := buildJS(src, dst, "."); err != nil {
		fmt.Fprintln(stderr, "packd build-js:", err)
		return exitError
	}
	fmt.Fprintln(stdout, "wrote", dst)
	return exitOK
}

// buildJS makes the module dst of the bundle src. When the bundle names
// its source map (esbuild --sourcemap: src.map, and a sourceMappingURL
// comment), the module carries its line table, so errors name the pack's
// sources by their paths relative to root.
func buildJS(src, dst, root string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if fi.Size() > jssdk.MaxBundle {
		return fmt.Errorf("%s is %d bytes, over the %d a module takes", src, fi.Size(), jssdk.MaxBundle)
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	// Read at most one byte past the limit: a file that grew since the
	// stat is refused too, never read whole.
	bundle, err := io.ReadAll(io.LimitReader(f, jssdk.MaxBundle+1))
	if err != nil {
		return err
	}
	mod, err := jssdk.Module(jssdk.Runtime, bundle)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if table, err := lineTable(src, bundle, root); err != nil {
		return err
	} else if table != nil {
		mod = jssdk.WithLines(mod, table)
	}
	return writeFileAtomic(dst, mod)
}

// lineTable is the line table of the bundle src from its source map, or
// nil when the bundle names none (a map beside it that the bundle does
// not name is left alone: it may be another build's).
func lineTable(src string, bundle []byte, root string) ([]byte, error) {
	mapName := filepath.Base(src) + ".map"
	if !bytes.Contains(bundle, []byte("//# sourceMappingURL="+mapName)) {
		return nil, nil
	}
	mapPath := filepath.Join(filepath.Dir(src), mapName)
	f, err := os.Open(mapPath)
	if err != nil {
		return nil, fmt.Errorf("%s names its source map %s: %w", src, mapName, err)
	}
	defer f.Close()
	sm, err := io.ReadAll(io.LimitReader(f, 4*jssdk.MaxBundle+1))
	if err != nil {
		return nil, err
	}
	if len(sm) > 4*jssdk.MaxBundle {
		return nil, fmt.Errorf("%s is over %d bytes", mapPath, 4*jssdk.MaxBundle)
	}
	absRoot, _ := filepath.Abs(root)
	table, err := jssdk.LineTable("pack.js", sm, func(s string) string {
		p, _ := filepath.Abs(filepath.Join(filepath.Dir(mapPath), filepath.FromSlash(s)))
		if rel, err := filepath.Rel(absRoot, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
		return filepath.ToSlash(p)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", mapPath, err)
	}
	return table, nil
}
