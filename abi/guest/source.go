//go:build !wasip1

package guest

import "embed"

// Source is this SDK module's own files (go.mod and its Go sources, those of
// packages wire and egress too), for `packd init` to copy into a new pack until the
// SDK is published. It is not built into pack modules (wasip1).
//
//go:embed go.mod *.go wire/*.go egress/*.go
var Source embed.FS
