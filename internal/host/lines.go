package host

import (
	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/wasmbin"
)

// readLines is the line table a module carries in its abi.SectionLines
// custom section (a JavaScript pack's, from its source map), or nil.
func readLines(wasm []byte) *abi.LineTable {
	return abi.ParseLineTable(wasmbin.Custom(wasm, abi.SectionLines))
}
