package host

import (
	"fmt"
	"io"
	"os"

	"github.com/kindgi/packd/internal/signing"
)

// checkSignature checks the index's signature against cfg.Trust: "" when
// a trusted key signed this very index (idx.Hash, of the bytes parsed),
// else the problem. The signature covers the modules through the index's
// moduleDigests, which loadModule checks against the bytes it compiles,
// so an index that names none is refused.
func checkSignature(cfg Config, idx *Index) string {
	path := cfg.SignaturePath
	if path == "" {
		path = cfg.IndexPath + ".sig"
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("The pack is not signed: its signature cannot be read (%v); packd trusts only signed packs (--trust)", err)
	}
	defer f.Close()
	env, err := io.ReadAll(io.LimitReader(f, signing.MaxEnvelope+1))
	if err != nil {
		return fmt.Sprintf("The pack's signature %s cannot be read: %v", path, err)
	}
	if _, err := signing.CheckIndex(env, cfg.Trust, idx.Hash); err != nil {
		return fmt.Sprintf("The pack's signature %s is refused: %v", path, err)
	}
	if idx.ModuleDigests == nil {
		return "The pack's index names no moduleDigests: its signature would not cover the modules (packd index --digests, then sign again)"
	}
	return ""
}
