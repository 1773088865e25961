package pysdk

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// The standard library a pack's module carries besides the runtime's own
// modules: runtime/library.json.gz (made by freeze.py beside the runtime,
// from the same CPython source) holds every module of Python's standard
// library the runtime does not carry and packd's Python does not leave out,
// with its source and the modules of the library it imports. A pack's
// module carries those its sources import, and what they import in turn.

//go:embed runtime/library.json.gz
var libraryGz []byte

// maxLibrary is the most the library unpacks to.
const maxLibrary = 64 << 20

// library is runtime/library.json.gz read.
type library struct {
	Python  string                 `json:"python"`
	Builtin []string               `json:"builtin"` // modules in C, linked into the runtime
	Frozen  []string               `json:"frozen"`  // modules frozen into the runtime
	LeftOut []string               `json:"leftOut"` // modules (and their submodules) packd's Python leaves out
	Modules map[string]*libraryMod `json:"modules"`
}

type libraryMod struct {
	File    string   `json:"file"` // under CPython's Lib/
	Package bool     `json:"package"`
	Source  string   `json:"source"`
	Imports []string `json:"imports"` // modules of the library it imports
}

var libraryOnce = sync.OnceValues(func() (*library, error) {
	zr, err := gzip.NewReader(bytes.NewReader(libraryGz))
	if err != nil {
		return nil, fmt.Errorf("packd's Python library: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxLibrary+1))
	if err != nil || len(b) > maxLibrary {
		return nil, fmt.Errorf("packd's Python library: unreadable or over %d bytes (%v)", maxLibrary, err)
	}
	var l library
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("packd's Python library: %w", err)
	}
	return &l, nil
})

// Needs is what a pack's sources import from outside themselves.
type Needs struct {
	// Library is the modules of Python's standard library the pack's
	// module carries for them (the runtime has the others already).
	Library []string
	// LeftOut is the modules they import that packd's Python leaves out
	// (freeze.py's LEFT_OUT: what needs files on disk, processes, a
	// terminal or native code, runs only as a program, or tests code):
	// importing one raises ImportError.
	LeftOut []string
	// Unknown is the modules they import that are neither the pack's nor
	// in packd's Python: a package from PyPI, say, whose sources the pack
	// would have to hold. Importing one raises ImportError, unless the
	// import is guarded.
	Unknown []string
}

// NeedsOf reads what the sources import.
func NeedsOf(sources []Source) (Needs, error) {
	lib, err := libraryOnce()
	if err != nil {
		return Needs{}, err
	}
	own := map[string]bool{}
	for _, s := range sources {
		own[strings.SplitN(s.Module, ".", 2)[0]] = true
	}
	have := map[string]bool{}
	for _, n := range slices.Concat(lib.Builtin, lib.Frozen) {
		have[n] = true
	}
	var needs Needs
	carried := map[string]bool{}
	var carry func(name string)
	carry = func(name string) {
		if name == "" || carried[name] || own[strings.SplitN(name, ".", 2)[0]] {
			return
		}
		carried[name] = true
		needs.Library = append(needs.Library, name)
		if i := strings.LastIndexByte(name, '.'); i > 0 {
			if _, ok := lib.Modules[name[:i]]; ok {
				carry(name[:i]) // its package runs first
			}
		}
		for _, dep := range lib.Modules[name].Imports {
			carry(dep)
		}
	}
	note := func(list *[]string, name string) {
		if !slices.Contains(*list, name) {
			*list = append(*list, name)
		}
	}
	for _, s := range sources {
		for _, imp := range importsOf(string(s.Text)) {
			m := imp.Module
			top := strings.SplitN(m, ".", 2)[0]
			switch {
			case own[top]:
				continue
			case lib.Modules[m] != nil:
				carry(m)
			case have[m]:
			case lib.leftOut(m) != "":
				note(&needs.LeftOut, lib.leftOut(m))
				continue
			case have[top] || lib.Modules[top] != nil:
				// a name inside a module of packd's Python (os.path), or
				// one it does not have, which the import will say
				carry(lib.longest(m))
			default:
				note(&needs.Unknown, top)
				continue
			}
			for _, n := range imp.Names {
				switch sub := m + "." + n; {
				case lib.Modules[sub] != nil:
					carry(sub)
				case lib.leftOut(sub) != "":
					note(&needs.LeftOut, lib.leftOut(sub))
				}
			}
		}
	}
	slices.Sort(needs.Library)
	slices.Sort(needs.LeftOut)
	slices.Sort(needs.Unknown)
	return needs, nil
}

// longest is the longest of name and its packages that is a module of the
// library ("" when none is).
func (l *library) longest(name string) string {
	for ; name != ""; name = name[:max(strings.LastIndexByte(name, '.'), 0)] {
		if l.Modules[name] != nil {
			return name
		}
	}
	return ""
}

// leftOut is the entry of LeftOut that covers name ("" when none does).
func (l *library) leftOut(name string) string {
	for _, n := range l.LeftOut {
		if name == n || strings.HasPrefix(name, n+".") {
			return n
		}
	}
	return ""
}
