package jssdk_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jssdk "github.com/kindgi/packd/sdk/js"
)

// TestModule: a pack's module is the runtime with the bundle in one more
// data segment, and nothing the runtime holds is lost.
func TestModule(t *testing.T) {
	bundle := []byte(`globalThis.x = "héllo";`)
	m, err := jssdk.Module(jssdk.Runtime, bundle)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(m, bundle) || len(m) <= len(jssdk.Runtime)+len(bundle) {
		t.Fatalf("the module (%d bytes) does not hold the bundle", len(m))
	}
	// The runtime's sections are all there but the code section, whose
	// one body changed, and the data sections, which gained a segment.
	if !bytes.Contains(m, jssdk.Runtime[len(jssdk.Runtime)-4096:]) {
		t.Error("the runtime's last sections are not in the module")
	}
	// A module made from a module made so is refused: it has a bundle.
	if _, err := jssdk.Module(m, bundle); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("a second bundle: %v", err)
	}
}

// TestModuleRefuses: what build-js is given that makes no module.
func TestModuleRefuses(t *testing.T) {
	counter, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "counter.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name            string
		runtime, bundle []byte
		want            string
	}{
		{"an empty bundle", jssdk.Runtime, nil, "the bundle is empty"},
		{"a bundle that is not UTF-8", jssdk.Runtime, []byte{'a', 0xff, 'b'}, "not UTF-8"},
		{"a bundle over the limit", jssdk.Runtime, bytes.Repeat([]byte("a"), jssdk.MaxBundle+1), "over the"},
		{"a runtime that is not wasm", []byte("#!/bin/sh\n"), []byte("1"), "not a WebAssembly 1.0 module"},
		{"a truncated runtime", jssdk.Runtime[:len(jssdk.Runtime)/2], []byte("1"), "runs past the end"},
		{"another module", counter, []byte("1"), "no kindgi_js_bundle export"},
	} {
		if _, err := jssdk.Module(c.runtime, c.bundle); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
