// Package wasmexamples holds example packs built to WebAssembly with the Go SDK
// (abi/guest). Each directory is a main package with its pack index:
//
//	echo/         answers any tool id with its input (schema tests, benchmarks)
//	conformance/  the conformance fixture pack of the existing pack services
//
// Build one with `make wasm` or
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o echo/echo.wasm ./echo
package wasmexamples
