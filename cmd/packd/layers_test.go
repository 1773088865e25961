package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const modulePath = "github.com/kindgi/packd"

// layers are the packages' places, lowest first: abi ← sandbox ← replay
// ← host ← service ← server, mcp ← cmd (all but abi under internal/). The
// faces, server (HTTP) and mcp, share the top layer (faces); oci, which
// moves a pack to and from a registry and checks its index with host's
// rules, sits beside service. The other
// packages of the top-level internal/ are libraries any layer may use
// (-1).
var layers = []string{"abi", "internal/sandbox", "internal/replay", "internal/host", "internal/service", "internal/server"}

const (
	layerSandbox = 1
	layerHost    = 3
	layerService = 4
	layerServer  = 5
)

// layer is a package's place in layers.
func layer(pkg string) int {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/")
	for i, prefix := range layers {
		if rel == prefix || strings.HasPrefix(rel, prefix+"/") {
			return i
		}
	}
	if rel == "internal/mcp" || strings.HasPrefix(rel, "internal/mcp/") {
		return layerServer
	}
	if rel == "internal/oci" { // a pack's distribution: it checks host's index
		return layerService
	}
	if strings.HasPrefix(rel, "internal/") {
		return -1
	}
	return len(layers) // commands and example packs
}

// TestLayers: no package imports one of a higher layer, and no face
// imports the other; nothing under the top-level internal/ imports replay
// or above; service reaches sandbox only through host, and server reaches
// the pack only through service (its code imports neither host nor
// sandbox; its tests load packs; mcp reads host's index to list tools),
// so each concept stays in its layer (RATIONALE.md, "three seams").
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}} |{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`, modulePath+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list found %d packages", len(lines))
	}
	for _, line := range lines {
		f := strings.Fields(line)
		pkg, inTests := f[0], false
		for _, imp := range f[1:] {
			if imp == "|" { // the tests' imports follow
				inTests = true
				continue
			}
			if !strings.HasPrefix(imp, modulePath+"/") || imp == pkg {
				continue
			}
			switch from, to := layer(pkg), layer(imp); {
			case from == -1 && to >= layerSandbox+1:
				t.Errorf("%s (internal) imports %s", pkg, imp)
			case from >= layerService && from <= layerServer && to == layerSandbox:
				t.Errorf("%s imports %s: it reaches the sandbox through host", pkg, imp)
			case from == layerServer && to == layerServer && !sameFace(pkg, imp):
				t.Errorf("%s imports %s: a face does not use another", pkg, imp)
			case from == layerServer && to == layerHost && !inTests && !strings.HasPrefix(pkg, modulePath+"/internal/mcp"):
				t.Errorf("%s (server) imports %s: a face reaches the pack through service", pkg, imp)
			case from >= 0 && to > from:
				t.Errorf("%s (layer %d) imports %s (layer %d)", pkg, from, imp, to)
			}
		}
	}
}

// sameFace says whether two packages of the faces' layer are one face's.
func sameFace(a, b string) bool {
	face := func(p string) string {
		rel := strings.TrimPrefix(p, modulePath+"/internal/")
		f, _, _ := strings.Cut(rel, "/")
		return f
	}
	return face(a) == face(b)
}

// TestFilesStaySmall: no non-test Go file of the repository is over 500
// lines (the house style's "files by concern"): a file that grows past it is
// split by concern, not let grow.
func TestFilesStaySmall(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "build" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		if lines := bytes.Count(b, []byte{'\n'}); lines > 500 {
			t.Errorf("%s has %d lines: split it by concern", path, lines)
		}
		return nil
	})
	if err != nil || n < 50 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}
