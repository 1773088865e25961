package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	if err := buildJS(src, dst); err != nil {
		fmt.Fprintln(stderr, "packd build-js:", err)
		return exitError
	}
	fmt.Fprintln(stdout, "wrote", dst)
	return exitOK
}

func buildJS(src, dst string) error {
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
	return writeFileAtomic(dst, mod)
}
