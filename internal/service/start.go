package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kindgi/packd/internal/host"
)

// StartConfig is a whole pack service but its faces: the pack to load, how
// calls are admitted, and what it keeps beside them (metrics, records of
// recorded calls, audit log, pack code output, traces). `packd serve` fills
// it from flags and the environment; Start does the rest.
type StartConfig struct {
	// Load is the pack. Start sets its Observe (pool events, dropped
	// output lines, cache repairs, pack code output, outbound requests,
	// the tracer).
	Load host.Config
	// Calls is how calls are admitted: MaxConcurrency, StrictEnv,
	// TenantID, the drain timeout and the tenant share. Start sets its
	// Pack, Log, Hooks, Metrics, MissingEnv, Records and Tracing.
	Calls Config
	// Policy is a policy file (host.LoadPolicy) gating every call and
	// holding the tenants' budgets, read anew by every reload; "": none.
	Policy string
	// MetricsTenantLabel labels packd_calls_total with the tenant id.
	MetricsTenantLabel bool
	// AuditLog is a file that gets one JSON line per call; "": none.
	AuditLog string
	// UsageLog is a file that gets one JSON line per tenant every
	// UsageInterval (0: DefaultUsageInterval): what its calls used
	// (usage.go); "": none.
	UsageLog      string
	UsageInterval time.Duration
	// RecordDir is where the records of recorded calls go, one file each
	// (ReplayRecords), at most RecordMaxBytes of them (0: no bound); "":
	// no call is recorded. Load.Record says which calls are (nil: all but
	// those whose limits.record is false).
	RecordDir      string
	RecordMaxBytes int64
	// Traces exports OpenTelemetry spans over OTLP/HTTP, configured by the
	// OTEL_* variables of the process environment (see Tracing).
	Traces bool
	// GuestOutput is "records" (each line of pack code output in a
	// guest-output log line; the default) or "plain" (as written: stdout
	// to Load.Sandbox.Stdout, stderr into the log).
	GuestOutput string
	// Environ is the process environment (os.Environ()): which names pack
	// code does not see (env-dropped) and which required ones are missing.
	// With EnvFilterOff pack code sees all of it but the KINDGI_ names.
	Environ      []string
	EnvFilterOff bool
	// Version is packd's version (packd_build_info).
	Version string
	// Log receives the service's log lines; nil discards them.
	Log *Log
}

// tracesFlushWait bounds how long Close waits for the last spans to be
// exported.
const tracesFlushWait = 3 * time.Second

// Start loads the pack and makes a service of it, with its metrics (on
// Registry), audit log, record directory, tracing and pack code output. It
// writes the boot lines (env-dropped, missing-env). When the service
// cannot start, Start writes a boot-failed line naming every problem,
// releases what it took, and returns the error. Close releases it all.
func Start(ctx context.Context, cfg StartConfig) (*Service, error) {
	log := cfg.Log
	if log == nil {
		log = NewLog(io.Discard)
	}
	st := &started{retiring: map[*host.Pack]struct{}{}, registry: prometheus.NewRegistry()}
	s, err := st.start(ctx, cfg, log)
	if err != nil {
		st.teardown()
		log.Lifecycle("boot-failed", "error", "The pack service could not boot", ProblemFields(err)...)
		return nil, err
	}
	return s, nil
}

func (st *started) start(ctx context.Context, cfg StartConfig, log *Log) (*Service, error) {
	hc := cfg.Load
	// The metrics exist before the pack, which reports to them from its
	// first load on.
	m, err := NewMetrics(st.registry, MetricsConfig{Version: cfg.Version, TenantLabel: cfg.MetricsTenantLabel, GoCollectors: true})
	if err != nil {
		return nil, err
	}
	st.metrics = m
	// One observer, given once; each reload's pack adds its egress hook
	// (loadPack).
	hc.Observe = host.Observer{
		PoolEvent:   m.PoolEvent,
		DroppedLine: m.GuestLineDropped,
		CacheRepaired: func(why string, removed int) {
			log.Lifecycle("cache-repaired", "warn", "The compilation cache held a corrupt entry: the module compiled anew",
				Field{Key: "removed", Value: removed}, Field{Key: "error", Value: why})
		},
	}
	// Pack code output never waits for its reader (the sandbox queues it)
	// and, by default, never reaches the log as it is written.
	switch cfg.GuestOutput {
	case "", "records":
		st.guest = log.guestOutput(func() { m.GuestLineDropped("records") })
		hc.Sandbox.Stdout, hc.Sandbox.Stderr = st.guest.Stream("stdout"), st.guest.Stream("stderr")
		hc.Observe.GuestOutput = st.guest.Line
	case "plain":
		hc.Sandbox.Stderr = log.Writer()
	default:
		return nil, fmt.Errorf(`guest output must be "records" or "plain", got %q`, cfg.GuestOutput)
	}
	var policy *host.Policy
	if cfg.Policy != "" {
		if policy, err = host.LoadPolicy(cfg.Policy); err != nil {
			return nil, err
		}
		hc.Gate = policy
	}
	if cfg.EnvFilterOff {
		hc.PassEnv = passedEnv(cfg.Environ)
	}
	if cfg.Traces {
		t, err := NewTracing(ctx, cfg.Version, log)
		if err != nil {
			return nil, err
		}
		st.tracing, hc.Observe.Tracer = t, t
		if err := t.register(st.registry); err != nil {
			return nil, err
		}
	}
	hooks := []Hook{CallLines(log)} // the metrics run as a hook of their own (Config.Metrics)
	if cfg.AuditLog != "" {
		if st.audit, err = OpenAuditLog(cfg.AuditLog, m, log); err != nil {
			return nil, err
		}
		hooks = append(hooks, st.audit)
	}
	if cfg.UsageLog != "" {
		if st.usage, err = openUsageLog(cfg.UsageLog, cfg.UsageInterval, log); err != nil {
			return nil, err
		}
		hooks = append(hooks, st.usage)
	}
	switch {
	case cfg.RecordDir == "":
		hc.Record = nil
	case hc.Record == nil:
		hc.Record = &host.RecordConfig{}
	}
	if cfg.RecordDir != "" {
		if st.replays, err = OpenReplayRecords(cfg.RecordDir, cfg.RecordMaxBytes, m, log); err != nil {
			return nil, err
		}
	}
	st.load, st.environ, st.strictEnv, st.policyPath = hc, cfg.Environ, cfg.Calls.StrictEnv, cfg.Policy
	pack, err := st.loadPack(ctx, nil)
	if pack != nil {
		st.pack = pack
	}
	if err != nil {
		return nil, err
	}
	if dropped := droppedEnv(cfg.Environ, pack.GuestEnvNames()); len(dropped) > 0 {
		log.Lifecycle("env-dropped", "info", fmt.Sprintf("Pack code will not see %d environment name(s) of this process", len(dropped)),
			Field{Key: "filter", Value: map[bool]string{false: "on", true: "off"}[cfg.EnvFilterOff]}, Field{Key: "names", Value: dropped})
	}
	cc := cfg.Calls
	cc.Pack, cc.Log, cc.Hooks, cc.Metrics, cc.Tracing, cc.Policy = pack, log, hooks, m, st.tracing, policy
	if st.replays != nil { // a nil *ReplayRecords is not a nil RecordSink
		cc.Records = st.replays
	}
	cc.MissingEnv = pack.MissingEnv(lookupIn(cfg.Environ))
	s, err := New(cc)
	if err != nil {
		return nil, err
	}
	s.started = st
	if len(cc.MissingEnv) > 0 {
		s.missingEnvRecord(cc.MissingEnv)
	}
	return s, nil
}

// Registry holds the service's metrics (those of Start; nil from New).
func (s *Service) Registry() *prometheus.Registry {
	if s.started == nil {
		return nil
	}
	return s.started.registry
}

// Reopen reopens the audit and usage logs (rotated by logrotate, which renames them and
// then signals); nil without one. What cannot be reopened stays as it was.
func (s *Service) Reopen() error {
	if s.started == nil {
		return nil
	}
	var errs []error
	if a := s.started.audit; a != nil {
		errs = append(errs, a.Reopen())
	}
	if u := s.started.usage; u != nil {
		errs = append(errs, u.Reopen())
	}
	return errors.Join(errs...)
}

// teardown closes what Start opened, in order; what was never opened is
// skipped.
func (st *started) teardown() {
	if st.audit != nil {
		_ = closeWithin(st.audit, 5*time.Second)
	}
	if st.usage != nil { // after the calls: the last interval, whole
		_ = closeWithin(st.usage, 5*time.Second)
	}
	if st.replays != nil {
		_ = closeWithin(st.replays, 5*time.Second)
	}
	st.packMu.Lock()
	st.stopping = true
	packs := []*host.Pack{}
	if st.pack != nil {
		packs = append(packs, st.pack)
	}
	for p := range st.retiring { // calls on them past the drain were cut off
		packs = append(packs, p)
	}
	st.packMu.Unlock()
	for _, p := range packs {
		_ = p.Close(context.Background())
	}
	if st.tracing != nil { // the last spans; a collector that is down waits no longer
		_ = closeWithin(st.tracing, tracesFlushWait)
	}
	if st.guest != nil {
		_ = closeWithin(st.guest, time.Second) // after the pack's close has flushed into it
	}
}

// closeWithin closes c, waiting at most d for what it still writes.
func closeWithin(c interface{ Close(context.Context) error }, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Close(ctx)
}

// ProblemFields are the fields of a log line that says why a pack did not
// load: every problem, and where module paths resolve when a module is
// missing.
func ProblemFields(err error) []Field {
	fields := []Field{{Key: "problems", Value: []string{err.Error()}}}
	if le := (*host.LoadError)(nil); errors.As(err, &le) {
		fields[0].Value = le.Problems
		if le.ModuleRoot != "" {
			fields = append(fields, Field{Key: "moduleRoot", Value: le.ModuleRoot})
		}
	}
	return fields
}

// passedEnv is what pack code sees with the environment filter off: the
// process environment without the KINDGI_ names (the token and the
// service's own settings).
func passedEnv(environ []string) []string {
	env := []string{}
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "KINDGI_") {
			env = append(env, kv)
		}
	}
	return env
}

// droppedEnv names the process environment names pack code does not see.
func droppedEnv(environ, seen []string) []string {
	dropped := []string{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(seen, name) && !slices.Contains(dropped, name) {
			dropped = append(dropped, name)
		}
	}
	slices.Sort(dropped)
	return dropped
}

// lookupIn is os.LookupEnv over an environment list (the first of a
// repeated name wins, as in getenv(3)).
func lookupIn(environ []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, kv := range environ {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
}
