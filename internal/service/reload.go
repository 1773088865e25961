package service

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kindgi/packd/internal/host"
)

// errStopping is a reload's error when the service stops before the new
// pack could serve.
var errStopping = errors.New("the service is stopping")

// loadPack loads the pack of the service's load config: at boot
// (replaces nil) or to replace the pack served, in whose memory budget the
// new one then counts. Outbound requests of its calls are counted, and in
// the audit log with its artifact version.
func (st *started) loadPack(ctx context.Context, replaces *host.Pack) (*host.Pack, error) {
	hc := st.load
	hc.Replaces = replaces
	var version atomic.Pointer[string] // set once loaded, before any call
	hc.Observe.EgressRequest = func(ev host.EgressEvent) {
		st.metrics.EgressRequest(ev)
		if a := st.audit; a != nil {
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
// returns the failure. Reloads run one at a time; a service made by New
// has nothing to reload from.
func (s *Service) Reload(ctx context.Context) error {
	st := s.started
	if st == nil {
		return fmt.Errorf("%w: a service made by New cannot reload", ErrConfig)
	}
	st.reloading.Lock()
	defer st.reloading.Unlock()
	st.packMu.Lock()
	old := st.pack
	st.packMu.Unlock()
	was := old.Index()
	s.cfg.Log.Lifecycle("reloading", "info", "Loading the pack anew; "+was.ArtifactVersion+" serves meanwhile",
		Field{Key: "indexPath", Value: st.load.IndexPath})
	began := time.Now()
	var (
		policy *host.Policy
		pack   *host.Pack
		err    error
	)
	if st.policyPath != "" {
		// The policy is read anew: its gate is the new pack's, its
		// budgets the service's once the pack serves.
		if policy, err = host.LoadPolicy(st.policyPath); err == nil {
			st.load.Gate = policy
		}
	}
	if err == nil {
		pack, err = st.loadPack(ctx, old)
	}
	seconds := time.Since(began).Seconds()
	var missing []string
	if err == nil {
		missing = pack.MissingEnv(lookupIn(st.environ))
		if st.strictEnv && len(missing) > 0 {
			err = &host.LoadError{Problems: []string{"Required env names are not set: " + strings.Join(missing, ", ") +
				" (KINDGI_PACK_ENV_CHECK is strict: the service would not be ready)"}}
		}
	}
	if err == nil {
		err = s.serve(pack, missing)
	}
	if err == nil && st.policyPath != "" {
		s.budgets.setPolicy(policy)
	}
	if err != nil {
		if pack != nil {
			_ = pack.Close(context.Background())
		}
		fields := append(ProblemFields(err), Field{Key: "artifactVersion", Value: was.ArtifactVersion}, Field{Key: "seconds", Value: seconds})
		st.metrics.reloaded(false, seconds)
		s.cfg.Log.Lifecycle("reload-failed", "error", "The pack did not reload: "+was.ArtifactVersion+" goes on serving", fields...)
		return err
	}
	idx := pack.Index()
	st.metrics.reloaded(true, seconds)
	message := fmt.Sprintf("Serving %s (was %s)", idx.ArtifactVersion, was.ArtifactVersion)
	if idx.ArtifactVersion == was.ArtifactVersion {
		message = fmt.Sprintf("Serving %s anew: its index and modules loaded again (index %s)", idx.ArtifactVersion, shortHash(idx.Hash))
	}
	s.cfg.Log.Lifecycle("reloaded", "info", message,
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
	st := s.started
	st.packMu.Lock()
	defer st.packMu.Unlock()
	if st.stopping {
		return errStopping
	}
	old := st.pack
	st.pack = pack
	st.retiring[old] = struct{}{}
	released := s.replace(pack, missing)
	st.metrics.setPack(pack)
	go func() {
		<-released
		st.packMu.Lock()
		_, open := st.retiring[old]
		delete(st.retiring, old)
		st.packMu.Unlock()
		if open { // else teardown closed it
			_ = old.Close(context.Background())
		}
	}()
	return nil
}

// missingEnvRecord says which required env names are not set.
func (s *Service) missingEnvRecord(missing []string) {
	s.cfg.Log.Lifecycle("missing-env", "warn", "Required env names are not set: "+strings.Join(missing, ", "),
		Field{Key: "check", Value: map[bool]string{false: "warn", true: "strict"}[s.started.strictEnv]}, Field{Key: "names", Value: missing})
}

// shortHash is an index hash as a person reads it: its first 12 hex digits.
func shortHash(h string) string {
	if algo, hex, ok := strings.Cut(h, ":"); ok && len(hex) > 12 {
		return algo + ":" + hex[:12]
	}
	return h
}

// Retiring is how many packs a reload replaced are still open, calls
// running on them (0 for a service made by New).
func (s *Service) Retiring() int {
	st := s.started
	if st == nil {
		return 0
	}
	st.packMu.Lock()
	defer st.packMu.Unlock()
	return len(st.retiring)
}
