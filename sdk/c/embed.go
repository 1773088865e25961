// Package csdk holds packd's C SDK, kindgi.h, for `packd init --lang c` to
// copy into a new pack.
package csdk

import _ "embed"

// Header is kindgi.h.
//
//go:embed kindgi.h
var Header []byte
