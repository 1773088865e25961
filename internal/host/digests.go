package host

import (
	"regexp"
	"slices"

	"github.com/kindgi/packd/internal/ojson"
)

// The index's moduleDigests: what each module's bytes must hash to, so that
// a signature over the index covers the code. loadModule checks them
// against the bytes it compiles.

// digests reads moduleDigests: a "sha256:" digest for every module path
// the index names (paths), and for no other.
func (p *problemList) digests(v any, paths []string) map[string]string {
	o, ok := v.(*ojson.Object)
	if !ok {
		p.add(`Index "moduleDigests" must be an object of module paths and their "sha256:" digests`)
		return nil
	}
	out := map[string]string{}
	for i, k := range o.Keys {
		d, _ := o.Vals[i].(string)
		switch {
		case !moduleDigest.MatchString(d):
			p.add(`Index moduleDigests[%q] must be "sha256:" and 64 lowercase hex digits, not %s`, k, ojson.Encode(o.Vals[i]))
		case !slices.Contains(paths, k):
			p.add("Index moduleDigests names %q, which no tool or guardrail names", k)
		default:
			out[k] = d
		}
	}
	for _, path := range paths {
		if _, ok := o.Get(path); !ok {
			p.add("Index moduleDigests has no digest of %q: an index that names digests names every module's", path)
		}
	}
	return out
}

// moduleDigest is a digest moduleDigests takes.
var moduleDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
