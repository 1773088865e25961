package main

import (
	"os/exec"
	"strings"
	"testing"
)

const modulePath = "github.com/kindgi/packd"

// layer is a package's place in abi ← sandbox ← host ← server ← cmd; the
// top-level internal packages are libraries any layer may use (-1).
func layer(pkg string) int {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/")
	for i, prefix := range []string{"abi", "sandbox", "host", "server"} {
		if rel == prefix || strings.HasPrefix(rel, prefix+"/") {
			return i
		}
	}
	if strings.HasPrefix(rel, "internal/") {
		return -1
	}
	return 4 // commands and example packs
}

// TestLayers: no package imports one of a higher layer, and nothing under
// the top-level internal/ imports server or a command, so each concept
// stays in its layer (RATIONALE.md, "three seams").
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, modulePath+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list found %d packages", len(lines))
	}
	for _, line := range lines {
		f := strings.Fields(line)
		pkg := f[0]
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, modulePath+"/") {
				continue
			}
			switch from, to := layer(pkg), layer(imp); {
			case from == -1 && to >= 3:
				t.Errorf("%s (internal) imports %s", pkg, imp)
			case from >= 0 && to > from:
				t.Errorf("%s (layer %d) imports %s (layer %d)", pkg, from, imp, to)
			}
		}
	}
}
