package service

import (
	"sync/atomic"

	"github.com/kindgi/packd/internal/host"
)

// generation is one loaded pack and what the service answers from it. The
// service holds one reference to the generation it serves; each call holds
// one from before its checks until its hooks have run, so that a call
// finishes on the pack it started on. When the last reference is given up
// (the service has moved to another generation and the last call on this
// one has ended) released closes, and its pack may be closed.
type generation struct {
	pack       *host.Pack
	missingEnv []string
	// info is the pack's info document; artifactVersion the pack's, said
	// with every answer.
	info            []byte
	artifactVersion string
	refs            atomic.Int64
	released        chan struct{}
}

func newGeneration(p *host.Pack, missingEnv []string) *generation {
	if missingEnv == nil {
		missingEnv = []string{}
	}
	g := &generation{pack: p, missingEnv: missingEnv, info: p.Info(missingEnv),
		artifactVersion: p.Index().ArtifactVersion, released: make(chan struct{})}
	g.refs.Store(1) // the service's
	return g
}

// acquire takes a reference, unless the last one is already given up.
func (g *generation) acquire() bool {
	for {
		n := g.refs.Load()
		if n == 0 {
			return false
		}
		if g.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (g *generation) release() {
	if g.refs.Add(-1) == 0 {
		close(g.released)
	}
}

// acquire takes a reference to the generation served now. A generation
// whose last reference is gone is no longer the one served, so the loop
// ends at the next load.
func (s *Service) acquire() *generation {
	for {
		if g := s.gen.Load(); g.acquire() {
			return g
		}
	}
}

// replace serves p from the next call on, with missingEnv its required env
// names that are not set (Config.MissingEnv). Calls already admitted finish
// on the pack they started on. The channel closes once none is left: the
// pack replaced may then be closed, which is the caller's to do.
func (s *Service) replace(p *host.Pack, missingEnv []string) <-chan struct{} {
	old := s.gen.Swap(newGeneration(p, missingEnv))
	old.release()
	return old.released
}
