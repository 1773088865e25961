// Package pysdk holds packd's Python runtime and the Python SDK that goes
// with it: runtime/runtime.wasm.gz (CPython 3.11 behind the guest ABI,
// built from runtime/ by make py-runtime), packd_sdk (the module packs
// import, frozen into the runtime), and Module, which makes a pack's
// module from the runtime and the pack's sources, as `packd build-py`
// does.
package pysdk

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/wasmbin"
)

//go:embed runtime/runtime.wasm.gz
var runtimeGz []byte

// maxRuntime is the most the runtime unpacks to (a module packd loads is at
// most 64 MiB by default).
const maxRuntime = 64 << 20

var runtimeOnce = sync.OnceValues(func() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(runtimeGz))
	if err != nil {
		return nil, fmt.Errorf("packd's Python runtime: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxRuntime+1))
	if err != nil {
		return nil, fmt.Errorf("packd's Python runtime: %w", err)
	}
	if len(b) > maxRuntime {
		return nil, fmt.Errorf("packd's Python runtime unpacks to over %d bytes", maxRuntime)
	}
	return b, nil
})

// Runtime is the Python runtime without a pack (runtime/runtime.wasm.gz,
// unpacked once).
func Runtime() ([]byte, error) { return runtimeOnce() }

// BundleExport is the runtime's function that hands the pack's sources
// over: kindgi_py_bundle(0) is their length, kindgi_py_bundle(dst) copies
// them to dst. As built, the runtime answers 0 (no pack).
const BundleExport = abi.ExportPyBundle

// MaxBundle is the most source a pack's module takes.
const MaxBundle = 32 << 20

// Source is one module of a pack: its dotted name, the file it is (as
// tracebacks name it), its text, and whether it is a package's
// __init__.py.
type Source struct {
	Module  string
	File    string
	Text    []byte
	Package bool
}

// Module makes a pack's module from the runtime and the pack's sources,
// with the modules of the standard library they need that the runtime
// does not carry (NeedsOf: Library): they become a passive data segment of
// the runtime (wasmbin.WithBundle), and at _initialize the runtime imports
// each module main names, in order, from them.
func Module(runtime []byte, main []string, sources []Source) ([]byte, error) {
	if len(sources) == 0 {
		return nil, errors.New("no Python sources")
	}
	type entry struct {
		File    string `json:"file"`
		Source  string `json:"source"`
		Package bool   `json:"package,omitempty"`
		// Library: a module of the standard library, not the pack's.
		Library bool `json:"library,omitempty"`
	}
	modules := make(map[string]entry, len(sources))
	size := 0
	for _, s := range sources {
		if !validModule(s.Module) {
			return nil, fmt.Errorf("%s: %q is not a Python module name", s.File, s.Module)
		}
		if _, dup := modules[s.Module]; dup {
			return nil, fmt.Errorf("%s: module %s twice", s.File, s.Module)
		}
		if !utf8.Valid(s.Text) {
			return nil, fmt.Errorf("%s is not UTF-8 (packd's Python reads sources as UTF-8)", s.File)
		}
		if size += len(s.Text); size > MaxBundle {
			return nil, fmt.Errorf("the sources are over the %d bytes a module takes", MaxBundle)
		}
		modules[s.Module] = entry{File: s.File, Source: string(s.Text), Package: s.Package}
	}
	for _, m := range main {
		if _, ok := modules[m]; !ok {
			return nil, fmt.Errorf("module %s is not among the sources", m)
		}
	}
	needs, err := NeedsOf(sources)
	if err != nil {
		return nil, err
	}
	lib, _ := libraryOnce()
	for _, name := range needs.Library {
		m := lib.Modules[name]
		modules[name] = entry{File: LibraryFile(m.File), Source: m.Source, Package: m.Package, Library: true}
	}
	bundle, err := json.Marshal(struct {
		Main    []string         `json:"main"`
		Modules map[string]entry `json:"modules"`
	}{main, modules})
	if err != nil {
		return nil, err
	}
	return wasmbin.WithBundle(runtime, BundleExport, bundle)
}

// LibraryFile is how tracebacks name the file of a standard library
// module a pack's module carries (file is its path under CPython's Lib/).
func LibraryFile(file string) string { return "<python3.11>/" + file }

// validModule: dotted Python identifiers (ASCII ones: what a file name
// on every system spells the same).
func validModule(name string) bool {
	if name == "" {
		return false
	}
	for _, part := range strings.Split(name, ".") {
		if part == "" || part[0] >= '0' && part[0] <= '9' {
			return false
		}
		for _, c := range part {
			if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return false
			}
		}
	}
	return true
}
