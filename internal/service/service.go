package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/replay"
)

// Defaults of a zero Config.
const (
	DefaultMaxConcurrency = 32
	DefaultDrainTimeout   = 8 * time.Second
)

// Config is how a Service admits calls to a loaded pack. Pack is required.
type Config struct {
	// Pack is the pack served first (Reload serves another). A service
	// made by New does not own it; one made by Start does.
	Pack *host.Pack
	// MaxConcurrency caps the calls in flight (default 32).
	MaxConcurrency int
	// MissingEnv is the index's required env names that are not set; with
	// StrictEnv the service is not ready while any is listed.
	MissingEnv []string
	StrictEnv  bool
	// TenantID pins the service to one tenant (protocol 2.7.0); empty: none.
	// A call's claimed tenant (Request.ClaimedTenant) and its message's
	// ctx.tenantId must both be it (pack-tenant-mismatch).
	TenantID string
	// Log receives the service's log lines; nil discards them.
	Log *Log
	// Hooks are told of every call after its answer (see Hook). nil means
	// CallLines(Log) alone.
	Hooks []Hook
	// Records, when set, gets the record of every recorded call
	// (host.Config.Record) once its answer is written: a directory of them
	// (ReplayRecords), or what a command does with one.
	Records RecordSink
	// Tracing, when set, exports a span of every call (see Tracing).
	Tracing *Tracing
	// Metrics, when set, counts refusals, in-flight calls, hook panics and
	// every call (it runs as a hook after those in Hooks unless Hooks
	// already holds it), and describes the pack served.
	Metrics *Metrics
	// DrainTimeout bounds how long Drain waits for in-flight calls (default 8 s).
	DrainTimeout time.Duration
	// TenantShareOff lets one tenant hold the whole concurrency cap and
	// memory budget while others call. By default a tenant holds at most
	// its share of the cap and of the pack's memory budget while others
	// call (see fairShare): a call in flight, or one begun or ended within
	// TenantShareWindow (default 2 s), makes a tenant count.
	TenantShareOff    bool
	TenantShareWindow time.Duration
	// Policy, when set, holds what each tenant's tool calls may spend over
	// time (host.Policy.BudgetFor): a call whose tenant has spent its
	// budget is refused with CodeTenantBudget before any pack code runs
	// (see budgets). Its gate is the pack's (host.Config.Gate); a reload
	// reads both anew.
	Policy *host.Policy
	// TenantSharePause is how long a call refused for its tenant's share
	// (or its budget) waits before its refusal (default 250 ms; negative: none), its slot
	// already free: a tenant that retries at once cannot make its
	// refusals the load that slows the others.
	TenantSharePause time.Duration
}

// RecordSink keeps the records of recorded calls. Keep is told of each
// call to be recorded after its answer is written, on the call's
// goroutine, so it must be quick: rec is the record, or nil with skipped
// saying why there is none (host.RecordTooLarge, …); artifactVersion is
// that of the pack the call ran on.
type RecordSink interface {
	Keep(rec *replay.Record, skipped, artifactVersion string)
}

// Service runs calls on a pack, whatever face they came through: it alone
// holds the concurrency cap, drain, the tenant's fair share, both halves
// of the tenant pin, the generations of the pack served (reload), the hooks,
// the span and the record sink. Make one with New around a loaded pack,
// or with Start, which loads the pack and everything beside it.
type Service struct {
	cfg      Config
	sem      chan struct{}  // one slot per call in flight
	admit    host.Admission // each tenant's budget and share of sem
	budgets  *budgets
	draining atomic.Bool
	// cut is done when a drain's timeout passes: every call still running
	// descends from it (Context) and answers "cancelled".
	cut      context.Context
	cutCalls context.CancelFunc
	gen      atomic.Pointer[generation] // the pack served now
	started  *started                   // what Start opened; nil from New
}

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("service: bad config")

// New makes a service of a loaded pack, ready at once. The caller owns the
// pack, and the hooks, metrics, records and tracing it gives.
func New(cfg Config) (*Service, error) {
	if cfg.Pack == nil {
		return nil, fmt.Errorf("%w: a pack is required", ErrConfig)
	}
	if cfg.MaxConcurrency <= 0 {
		cfg.MaxConcurrency = DefaultMaxConcurrency
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.TenantShareWindow <= 0 {
		cfg.TenantShareWindow = DefaultTenantShareWindow
	}
	if cfg.TenantSharePause == 0 {
		cfg.TenantSharePause = DefaultTenantSharePause
	}
	if cfg.Log == nil {
		cfg.Log = NewLog(io.Discard)
	}
	if cfg.Hooks == nil {
		cfg.Hooks = []Hook{CallLines(cfg.Log)}
	}
	if cfg.Metrics != nil && !slices.ContainsFunc(cfg.Hooks, func(h Hook) bool { m, ok := h.(*Metrics); return ok && m == cfg.Metrics }) {
		cfg.Hooks = append(slices.Clone(cfg.Hooks), cfg.Metrics)
	}
	if cfg.Metrics != nil {
		cfg.Metrics.setPack(cfg.Pack) // the metrics describe the pack served
	}
	s := &Service{cfg: cfg, sem: make(chan struct{}, cfg.MaxConcurrency), budgets: newBudgets(cfg.Policy)}
	s.cut, s.cutCalls = context.WithCancel(context.Background())
	var share host.Admission
	if !cfg.TenantShareOff {
		share = newFairShare(cfg.MaxConcurrency, cfg.Pack.MemoryBudget(), cfg.TenantShareWindow).admit
	}
	s.admit = s.budgets.admitWith(share)
	s.gen.Store(newGeneration(cfg.Pack, cfg.MissingEnv))
	return s, nil
}

// Context is the context every call's should descend from (a face's base
// context): a drain whose timeout passes cancels it, and with it the calls
// still running.
func (s *Service) Context() context.Context { return s.cut }

// Pack is the pack served now.
func (s *Service) Pack() *host.Pack { return s.gen.Load().pack }

// Info is the pack's info document (GET /v1/info) of the pack served now.
func (s *Service) Info() []byte { return s.gen.Load().info }

// DescribeTool is the describe envelope of a tool of the pack served now
// (host.Pack.DescribeTool): no gate, no pack code, no audit line.
func (s *Service) DescribeTool(id, version string) ([]byte, bool) {
	return s.gen.Load().pack.DescribeTool(id, version) // its index only: no reference needed
}

// Ready is the refusal a call would get now for the service's state
// (draining, missing env), or nil when it is ready.
func (s *Service) Ready() *Refusal { return s.unavailable(s.gen.Load()) }

func (s *Service) unavailable(g *generation) *Refusal {
	switch {
	case s.draining.Load():
		return &Refusal{Code: CodeDraining}
	case s.cfg.StrictEnv && len(g.missingEnv) > 0:
		return &Refusal{Code: CodeMissingEnv, MissingEnv: g.missingEnv}
	}
	return nil
}

// CheckTenant checks a claimed tenant against the pin (Config.TenantID) for a
// request that is not a call (a face's info or describe): nil when it
// may be served. Call checks its own.
func (s *Service) CheckTenant(claimed []string) *Refusal {
	pin := s.cfg.TenantID
	if pin == "" {
		return nil
	}
	// One tenant: one claimed twice ("right, wrong") is refused, never
	// read by its first value.
	tenant := only(claimed)
	if tenant == pin {
		return nil
	}
	return &Refusal{Code: CodeTenantMismatch, NoTenant: len(claimed) < 2 && tenant == ""}
}

// only is a claim's value when it was made once, else "" (absent, or made
// more than once).
func only(values []string) string {
	if len(values) != 1 {
		return ""
	}
	return values[0]
}

// Refused counts a refusal a face answered by itself, before any call
// (a bad token, a tenant on a request that is not a call).
func (s *Service) Refused(f Face, code string) { s.cfg.Metrics.refused(f, code) }

// Drain stops taking calls (new ones and Ready are refused draining),
// writes the `draining` log line, and waits for the calls in flight up to
// the drain timeout (or until ctx is done). Calls still running when the
// timeout passes are cut: their guests are cancelled (Context), and each
// answers `cancelled` with its call line and audit line, as any call
// does, within cutGrace. It returns once none is running, or cutGrace
// after the cut.
func (s *Service) Drain(ctx context.Context) error {
	s.draining.Store(true)
	// Said only once new calls are refused, so that whoever reads the
	// log can rely on it.
	s.cfg.Log.Lifecycle("draining", "info", "Draining in-flight calls")
	// Taking every slot of the concurrency cap waits for every call in
	// flight, and keeps any new one from starting.
	taken := 0
	take := func(d time.Duration, done <-chan struct{}) bool {
		timer := time.NewTimer(d)
		defer timer.Stop()
		for ; taken < cap(s.sem); taken++ {
			select {
			case s.sem <- struct{}{}:
			case <-timer.C:
				return false
			case <-done:
				return false
			}
		}
		return true
	}
	if !take(s.cfg.DrainTimeout, ctx.Done()) {
		cut := cap(s.sem) - taken
		s.cutCalls()
		s.cfg.Log.Line("warn", fmt.Sprintf("The drain timed out: %d calls still running were cancelled", cut),
			Field{"event", "drain-cut"}, Field{"kind", "drain-cut"}, Field{"calls", cut})
		take(CutGrace, nil)
	}
	return nil
}

// CutGrace is how long calls a drain cut have to answer: a guest stops
// within a fuel slice of its cancellation, an outbound request at once. A
// face gives the last answers as long again to reach their callers.
const CutGrace = 2 * time.Second

// Close cancels the calls still running (ctx is not waited on) and, for a
// service made by Start, closes in order the audit log (flushing it), the
// record directory, the packs, the tracing and the pack code output. Safe
// twice.
func (s *Service) Close(ctx context.Context) error {
	s.cutCalls()
	if s.started != nil {
		s.started.close.Do(s.started.teardown)
	}
	return nil
}

// started is what Start opened beside the calls.
type started struct {
	// load is the pack's load config, wired to the service; environ and
	// strictEnv what its required env names are checked against.
	load      host.Config
	environ   []string
	strictEnv bool
	// policyPath is the policy file (StartConfig.Policy), read anew by
	// every reload; "": none.
	policyPath string
	// reloading is held by a reload; packMu guards pack (the pack served)
	// and retiring (packs replaced, each closed once its last call ends).
	reloading sync.Mutex
	packMu    sync.Mutex
	pack      *host.Pack
	retiring  map[*host.Pack]struct{}
	stopping  bool // teardown has begun: no reload serves
	registry  *prometheus.Registry
	metrics   *Metrics       // made before the pack
	audit     *AuditLog      // nil when off
	usage     *usageLog      // nil when off
	replays   *ReplayRecords // nil when off
	tracing   *Tracing       // nil when off
	guest     *guestLines
	close     sync.Once
}

// InFlight is how many calls hold a slot of the concurrency cap now.
func (s *Service) InFlight() int { return len(s.sem) }
