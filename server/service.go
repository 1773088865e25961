package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kindgi/packd/host"
)

// ServiceConfig is a whole running pack service: the pack to load, how
// calls are admitted, where it listens, and what it keeps beside the calls
// (metrics, call records, audit log, pack code output). `packd serve` fills
// it from flags and the environment; Start does the rest.
type ServiceConfig struct {
	// Load is the pack. Start wires its sandbox's pool events, dropped
	// output lines and (GuestOutput "records") output.
	Load host.Config
	// Server is the HTTP server's config: Token, MaxConcurrency, StrictEnv,
	// TenantID (both halves of the pin) and the timeouts. Start sets its
	// Pack, Log, Hooks, Metrics and MissingEnv.
	Server Config
	// Policy is a policy file (host.LoadPolicy) gating every call; "": none.
	Policy string
	// Host and Port are where calls are served (Port 0: a free port).
	Host string
	Port int
	// TLS, when On, serves calls over TLS (mutual with a client CA).
	TLS TLSConfig
	// MetricsAddr is where /metrics listens: "" for port 9464 of Host (a
	// free port of Host when 9464 is taken, said in a metrics-port-taken
	// record), "off", or an address, which must be free.
	MetricsAddr string
	// MetricsTenantLabel labels packd_calls_total with the tenant id.
	MetricsTenantLabel bool
	// AuditLog is a file that gets one JSON line per call; "": none.
	AuditLog string
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
	// guest-output record; the default) or "plain" (as written: stdout to
	// Load.Sandbox.Stdout, stderr into the log).
	GuestOutput string
	// Environ is the process environment (os.Environ()): which names pack
	// code does not see (env-dropped) and which required ones are missing.
	// With EnvFilterOff pack code sees all of it but the KINDGI_ names.
	Environ      []string
	EnvFilterOff bool
	// Version is packd's version (packd_build_info); MemoryBudgetMiB the
	// process's memory budget, said in the listening record.
	Version         string
	MemoryBudgetMiB int64
	// Log receives the service's log lines; nil discards them.
	Log *Log
}

// tracesFlushWait bounds how long Shutdown waits for the last spans to be
// exported.
const tracesFlushWait = 3 * time.Second

// Service is a running pack service, from Start to Shutdown.
type Service struct {
	rec *Log
	// load is the pack's load config, wired to the service (Start); env
	// and strictEnv what its required env names are checked against.
	load      host.Config
	environ   []string
	strictEnv bool
	metricsOf atomic.Pointer[Metrics]
	auditOf   atomic.Pointer[AuditLog]
	// reloading is held by a reload; packMu guards pack (the pack served)
	// and retiring (packs replaced, each closed once its last call ends).
	reloading sync.Mutex
	packMu    sync.Mutex
	pack      *host.Pack
	retiring  map[*host.Pack]struct{}
	stopping  bool // teardown has begun: no reload serves
	srv       *Server
	ln        net.Listener
	certs     *certificates  // nil without TLS
	metrics   *http.Server   // nil when off
	audit     *AuditLog      // nil when off
	replays   *ReplayRecords // nil when off
	tracing   *Tracing       // nil when off
	guest     *guestLines
	serving   bool          // the HTTP server owns ln
	done      chan struct{} // closed when the HTTP server has stopped
	served    error         // why it stopped on its own, if it did
	shutdown  sync.Once
	err       error
}

// Start loads the pack and serves it: it writes the boot records
// (env-dropped, missing-env, metrics-port-taken) and, once every listener
// is up, the listening record. When the service cannot start, Start writes
// a boot-failed record naming every problem, releases what it took, and
// returns the error.
func Start(ctx context.Context, cfg ServiceConfig) (*Service, error) {
	rec := cfg.Log
	if rec == nil {
		rec = NewLog(io.Discard)
	}
	s := &Service{rec: rec, done: make(chan struct{}), retiring: map[*host.Pack]struct{}{}}
	if err := s.start(ctx, cfg); err != nil {
		s.teardown()
		rec.Lifecycle("boot-failed", "error", "The pack service could not boot", problemFields(err)...)
		return nil, err
	}
	return s, nil
}

func (s *Service) start(ctx context.Context, cfg ServiceConfig) error {
	rec, hc := s.rec, cfg.Load
	// The sandbox reports pool events and dropped output lines from the
	// first load on; the metrics that count them need the loaded pack.
	metrics := &s.metricsOf
	dropped := func(stream string) { metrics.Load().GuestLineDropped(stream) }
	hc.Sandbox.DroppedLines = dropped
	hc.Sandbox.PoolEvents = func(ev host.PoolEvent) { metrics.Load().PoolEvent(ev) }
	hc.Sandbox.CacheRepaired = func(why string, removed int) {
		rec.Lifecycle("cache-repaired", "warn", "The compilation cache held a corrupt entry: the module compiled anew",
			Field{Key: "removed", Value: removed}, Field{Key: "error", Value: why})
	}
	// Pack code output never waits for its reader (the sandbox queues it)
	// and, by default, never reaches the log as it is written.
	switch cfg.GuestOutput {
	case "", "records":
		s.guest = rec.guestOutput(func() { dropped("records") })
		hc.Sandbox.Stdout, hc.Sandbox.Stderr = s.guest.Stream("stdout"), s.guest.Stream("stderr")
		hc.GuestOutput = s.guest.Line
	case "plain":
		hc.Sandbox.Stderr = rec.Writer()
	default:
		return fmt.Errorf(`guest output must be "records" or "plain", got %q`, cfg.GuestOutput)
	}
	if cfg.Policy != "" {
		p, err := host.LoadPolicy(cfg.Policy)
		if err != nil {
			return err
		}
		hc.Gate = p
	}
	if cfg.EnvFilterOff {
		hc.PassEnv = passedEnv(cfg.Environ)
	}
	if cfg.Traces {
		t, err := NewTracing(ctx, cfg.Version, rec)
		if err != nil {
			return err
		}
		s.tracing, hc.Network.Tracer = t, t
	}
	switch {
	case cfg.RecordDir == "":
		hc.Record = nil
	case hc.Record == nil:
		hc.Record = &host.RecordConfig{}
	}
	s.load, s.environ, s.strictEnv = hc, cfg.Environ, cfg.Server.StrictEnv
	pack, err := s.loadPack(ctx, nil)
	if pack != nil {
		s.pack = pack
	}
	if err != nil {
		return err
	}
	if dropped := droppedEnv(cfg.Environ, pack.GuestEnvNames()); len(dropped) > 0 {
		rec.Lifecycle("env-dropped", "info", fmt.Sprintf("Pack code will not see %d environment name(s) of this process", len(dropped)),
			Field{Key: "filter", Value: map[bool]string{false: "on", true: "off"}[cfg.EnvFilterOff]}, Field{Key: "names", Value: dropped})
	}
	missing := pack.MissingEnv(lookupIn(cfg.Environ))
	if len(missing) > 0 {
		s.missingEnvRecord(missing)
	}

	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, MetricsConfig{Pack: pack, Version: cfg.Version, TenantLabel: cfg.MetricsTenantLabel, GoCollectors: true})
	if err != nil {
		return err
	}
	metrics.Store(m)
	if s.tracing != nil {
		if err := s.tracing.register(reg); err != nil {
			return err
		}
	}
	hooks := []Hook{CallLines(rec)} // the metrics run as a hook of their own (Config.Metrics)
	if cfg.AuditLog != "" {
		if s.audit, err = OpenAuditLog(cfg.AuditLog, m, rec); err != nil {
			return err
		}
		hooks = append(hooks, s.audit)
		s.auditOf.Store(s.audit)
	}
	if cfg.RecordDir != "" {
		if s.replays, err = OpenReplayRecords(cfg.RecordDir, cfg.RecordMaxBytes, m, rec); err != nil {
			return err
		}
	}
	sc := cfg.Server
	sc.ReplayRecords = s.replays
	sc.Pack, sc.Log, sc.Hooks, sc.Metrics, sc.MissingEnv, sc.Tracing = pack, rec, hooks, m, missing, s.tracing
	if s.srv, err = New(sc); err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if cfg.TLS.On() {
		if tlsCfg, s.certs, err = serverTLS(cfg.TLS); err != nil {
			return err
		}
	}
	if s.ln, err = net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))); err != nil {
		return fmt.Errorf("Cannot listen: %w", err)
	}
	port := s.ln.Addr().(*net.TCPAddr).Port
	listening := []Field{{Key: "port", Value: port}, {Key: "packId", Value: pack.Index().PackID},
		{Key: "artifactVersion", Value: pack.Index().ArtifactVersion}, {Key: "memoryBudgetMiB", Value: float64(cfg.MemoryBudgetMiB)},
		{Key: "poolSize", Value: float64(hc.Sandbox.PoolSize)}}
	if s.tracing != nil {
		listening = append(listening, Field{Key: "traces", Value: "otlp"})
	}
	if tlsCfg != nil {
		s.ln = tls.NewListener(s.ln, tlsCfg)
		listening = append(listening, Field{Key: "tls", Value: map[bool]string{false: "on", true: "mutual"}[cfg.TLS.ClientCAFile != ""]})
	}
	if cfg.MetricsAddr != "off" {
		mln, err := listenMetrics(cfg.MetricsAddr, cfg.Host, rec)
		if err != nil {
			return fmt.Errorf("Cannot listen for metrics: %w", err)
		}
		s.metrics = &http.Server{Handler: metricsHandler(reg), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
		go func() {
			if err := s.metrics.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				rec.Lifecycle("metrics-stopped", "error", "/metrics stopped serving: "+err.Error())
			}
		}()
		listening = append(listening, Field{Key: "metricsPort", Value: mln.Addr().(*net.TCPAddr).Port})
	}
	s.serving = true
	go func() {
		s.served = s.srv.Serve(s.ln)
		close(s.done)
	}()
	rec.Lifecycle("listening", "info", fmt.Sprintf("Listening on port %d", port), listening...)
	return nil
}

// Reopen reopens what the service writes to and reads from files and may
// have been replaced under it: the audit log (rotated by logrotate, which
// renames it and then signals) and the TLS certificate and key. What
// cannot be reopened stays as it was. It writes a reopened record, or a
// reopen-failed record listing every problem, and returns them.
func (s *Service) Reopen() []string {
	var problems []string
	if s.audit != nil {
		if err := s.audit.Reopen(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if s.certs != nil {
		if err := s.certs.load(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		s.rec.Lifecycle("reopen-failed", "error", "Could not reopen every file; what failed stays as it was", Field{Key: "problems", Value: problems})
	} else {
		s.rec.Lifecycle("reopened", "info", "Reopened the audit log and the TLS certificate",
			Field{Key: "auditLog", Value: s.audit != nil}, Field{Key: "tls", Value: s.certs != nil})
	}
	return problems
}

// Addr is where calls are served.
func (s *Service) Addr() net.Addr { return s.ln.Addr() }

// Done is closed when the service has stopped serving: after Shutdown's
// drain, or on its own when its listener fails (call Shutdown then too).
func (s *Service) Done() <-chan struct{} { return s.done }

// Shutdown drains the calls in flight (Server.Drain; a service that has
// already stopped on its own is not drained), then closes, in order, the
// metrics listener, the audit log (flushing it), the pack and its modules,
// and the pack code output, and writes the stopped record last. It returns
// why the service stopped on its own, if it did. Safe twice.
func (s *Service) Shutdown(ctx context.Context) error {
	s.shutdown.Do(func() {
		select {
		case <-s.done:
		default:
			_ = s.srv.Drain(ctx) // writes the draining record
			<-s.done
		}
		s.teardown()
		if s.err = s.served; s.err != nil {
			s.rec.Lifecycle("stopped", "error", "The pack service stopped: "+s.err.Error())
			return
		}
		s.rec.Lifecycle("stopped", "info", "Stopped")
	})
	return s.err
}

// teardown closes what the service holds, in order; what was never opened
// is skipped.
func (s *Service) teardown() {
	if !s.serving && s.ln != nil {
		_ = s.ln.Close()
	}
	if s.metrics != nil {
		_ = s.metrics.Close()
	}
	if s.audit != nil {
		_ = closeWithin(s.audit, 5*time.Second)
	}
	if s.replays != nil {
		_ = closeWithin(s.replays, 5*time.Second)
	}
	s.packMu.Lock()
	s.stopping = true
	packs := []*host.Pack{}
	if s.pack != nil {
		packs = append(packs, s.pack)
	}
	for p := range s.retiring { // calls on them past the drain were cut off
		packs = append(packs, p)
	}
	s.packMu.Unlock()
	for _, p := range packs {
		_ = p.Close(context.Background())
	}
	if s.tracing != nil { // the last spans; a collector that is down waits no longer
		_ = closeWithin(s.tracing, tracesFlushWait)
	}
	if s.guest != nil {
		_ = closeWithin(s.guest, time.Second) // after the pack's close has flushed into it
	}
}

// closeWithin closes c, waiting at most d for what it still writes.
func closeWithin(c interface{ Close(context.Context) error }, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Close(ctx)
}

// problemFields are the fields of a record that says why a pack did not
// load: every problem, and where module paths resolve when a module is
// missing.
func problemFields(err error) []Field {
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

// defaultMetricsPort is where /metrics listens unless told otherwise.
const defaultMetricsPort = 9464

// listenMetrics listens where the operator said, or by default on port
// 9464 of the service's own host. Several services on one host is normal
// (one per pack, tests, sidecars): when the default port is taken, the
// metrics listen on a free port instead, said in a warning record and in
// the listening record's metricsPort. An address the operator set that
// cannot be bound fails the boot.
func listenMetrics(addr, host string, rec *Log) (net.Listener, error) {
	if addr != "" {
		return net.Listen("tcp", addr)
	}
	mln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(defaultMetricsPort)))
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		return mln, err
	}
	mln, err2 := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err2 != nil {
		return nil, err
	}
	port := mln.Addr().(*net.TCPAddr).Port
	rec.Lifecycle("metrics-port-taken", "warn",
		fmt.Sprintf("Port %d is taken (another service on this host?): /metrics listens on port %d", defaultMetricsPort, port),
		Field{Key: "metricsPort", Value: port}, Field{Key: "wanted", Value: defaultMetricsPort})
	return mln, nil
}

// metricsHandler serves the registry at /metrics (OpenMetrics when asked,
// which carries the trace id exemplars) and nothing else.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	return mux
}
