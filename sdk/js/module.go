package jssdk

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/wasmbin"
)

// BundleExport is the runtime's function that hands its bundle over:
// kindgi_js_bundle(0) is the bundle's length, kindgi_js_bundle(dst)
// copies it to dst. As built, the runtime answers 0 (no bundle).
const BundleExport = abi.ExportJSBundle

// MaxBundle is the largest bundle Module takes (packd loads modules of up
// to 64 MiB by default; a bundle that size is a mistake in the build).
const MaxBundle = 32 << 20

// Module makes a pack's module from the runtime and the pack's bundled
// JavaScript (wasmbin.WithBundle): the bundle becomes a passive data
// segment of its own, which kindgi_js_bundle copies out.
func Module(runtime, bundle []byte) ([]byte, error) {
	switch {
	case len(bundle) == 0:
		return nil, errors.New("the bundle is empty")
	case len(bundle) > MaxBundle:
		return nil, fmt.Errorf("the bundle is %d bytes, over the %d a module takes", len(bundle), MaxBundle)
	case !utf8.Valid(bundle):
		return nil, errors.New("the bundle is not UTF-8")
	}
	return wasmbin.WithBundle(runtime, BundleExport, bundle)
}
