package server

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kindgi/packd/host"
)

// errStopping is a reload's error when the service stops before the new
// pack could serve.
var errStopping = errors.New("the service is stopping")

// loadPack loads the pack of the service's load config: at boot
// (replaces nil) or to replace the pack served, in whose memory budget the
// new one then counts. Outbound requests of its calls are counted, and in
// the audit log with its artifact version.
func (s *Service) loadPack(ctx context.Context, replaces *host.Pack) (*host.Pack, error) {
	hc := s.load
	hc.Replaces = replaces
	var version atomic.Pointer[string] // set once loaded, before any call
	hc.Network.OnRequest = func(ev host.EgressEvent) {
		s.metricsOf.Load().EgressRequest(ev)
		if a := s.auditOf.Load(); a != nil {
			v := ""
			if p := version.Load(); p != nil {
				v = *p
			}
			a.Egress(ev, v)
		}
	}
	pack, err := host.Load(ctx, hc)
	if pack != nil {
		v := pack.Index().ArtifactVersion
		version.Store(&v)
	}
	// What loading left on the heap (the modules' bytes as read, what
	// wazero decoded them into, the pass's working copies) goes back to
	// the system now, rather than as the scavenger gets to it: a 10-module
	// Go pack's RSS after boot was 417 MB, 283 MB once returned.
	debug.FreeOSMemory()
	return pack, err
}

// Reload loads the pack again from its index and modules (they may have
// changed on disk) while the pack served goes on serving, and once the new
// one has loaded completely (compiled, checked, snapshotted) serves it from
// the next call on; calls in flight finish on the pack they started on,
// which is closed after the last of them. A pack that does not load (any
// problem at all, or a required env name that is not set while
// KINDGI_PACK_ENV_CHECK is strict, which would make the service unready)
// is not served: the old one goes on. Reload writes a reloading record,
// then reloaded (with the new artifactVersion and indexHash) or
// reload-failed (with every problem), counts the reload in metrics, and
// returns the failure. Reloads run one at a time.
func (s *Service) Reload(ctx context.Context) error {
	s.reloading.Lock()
	defer s.reloading.Unlock()
	s.packMu.Lock()
	old := s.pack
	s.packMu.Unlock()
	was := old.Index()
	s.rec.Lifecycle("reloading", "info", "Loading the pack anew; "+was.ArtifactVersion+" serves meanwhile",
		Field{Key: "indexPath", Value: s.load.IndexPath})
	began := time.Now()
	pack, err := s.loadPack(ctx, old)
	seconds := time.Since(began).Seconds()
	var missing []string
	if err == nil {
		missing = pack.MissingEnv(lookupIn(s.environ))
		if s.strictEnv && len(missing) > 0 {
			err = &host.LoadError{Problems: []string{"Required env names are not set: " + strings.Join(missing, ", ") +
				" (KINDGI_PACK_ENV_CHECK is strict: the service would not be ready)"}}
		}
	}
	if err == nil {
		err = s.serve(pack, missing)
	}
	if err != nil {
		if pack != nil {
			_ = pack.Close(context.Background())
		}
		fields := append(problemFields(err), Field{Key: "artifactVersion", Value: was.ArtifactVersion}, Field{Key: "seconds", Value: seconds})
		s.metricsOf.Load().reloaded(false, seconds)
		s.rec.Lifecycle("reload-failed", "error", "The pack did not reload: "+was.ArtifactVersion+" goes on serving", fields...)
		return err
	}
	idx := pack.Index()
	s.metricsOf.Load().reloaded(true, seconds)
	s.rec.Lifecycle("reloaded", "info", fmt.Sprintf("Serving %s (was %s)", idx.ArtifactVersion, was.ArtifactVersion),
		Field{Key: "packId", Value: idx.PackID}, Field{Key: "artifactVersion", Value: idx.ArtifactVersion},
		Field{Key: "indexHash", Value: idx.Hash}, Field{Key: "previousArtifactVersion", Value: was.ArtifactVersion},
		Field{Key: "seconds", Value: seconds})
	if len(missing) > 0 {
		s.missingEnvRecord(missing)
	}
	return nil
}

// serve makes a loaded pack the one served, unless the service is
// stopping, and closes the one it replaces once its last call has ended.
func (s *Service) serve(pack *host.Pack, missing []string) error {
	s.packMu.Lock()
	defer s.packMu.Unlock()
	if s.stopping {
		return errStopping
	}
	old := s.pack
	s.pack = pack
	s.retiring[old] = struct{}{}
	released := s.srv.Replace(pack, missing)
	s.metricsOf.Load().setPack(pack)
	go func() {
		<-released
		s.packMu.Lock()
		_, open := s.retiring[old]
		delete(s.retiring, old)
		s.packMu.Unlock()
		if open { // else teardown closed it
			_ = old.Close(context.Background())
		}
	}()
	return nil
}

// missingEnvRecord says which required env names are not set.
func (s *Service) missingEnvRecord(missing []string) {
	s.rec.Lifecycle("missing-env", "warn", "Required env names are not set: "+strings.Join(missing, ", "),
		Field{Key: "check", Value: map[bool]string{false: "warn", true: "strict"}[s.strictEnv]}, Field{Key: "names", Value: missing})
}
