// Package jssdk holds packd's JavaScript runtime and the TypeScript SDK
// that goes with it: runtime/runtime.wasm (QuickJS behind the guest ABI,
// built from runtime/runtime.c and prelude.js by make), and Module, which
// makes a pack's module from the runtime and the pack's bundle, as
// `packd build-js` does.
package jssdk

import "embed"

// Runtime is runtime/runtime.wasm: the JavaScript runtime without a pack.
//
//go:embed runtime/runtime.wasm
var Runtime []byte

// SDK is the SDK's npm package (package.json, its modules and types), for
// `packd init --lang ts` to copy into a new pack until it is published.
//
//go:embed package.json index.js index.d.ts define.js define.d.ts types.js types.d.ts http.js needs.js invoke.js invoke-node.js globals.d.ts
var SDK embed.FS
