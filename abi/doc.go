// Package abi is packd's wire contract, shared by every other package: the
// Pack protocol v2 response messages and their 14 error codes, the Ajv-shaped
// validation issue, and the guest ABI (version 1) a WebAssembly pack module
// implements. GUEST-ABI.md in this directory is the normative description of
// the guest ABI for authors writing a pack in any language; abi/guest is the Go
// SDK that implements it.
package abi
