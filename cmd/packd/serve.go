package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kindgi/packd/host"
	"github.com/kindgi/packd/sandbox"
	"github.com/kindgi/packd/server"
)

const tokenEnv = "KINDGI_PACK_SERVICE_TOKEN"

// serviceConfig is the process contract's configuration, read from flags and
// the environment.
type serviceConfig struct {
	load           loadFlags
	host           string
	metricsAddr    string
	envFilterOff   bool // KINDGI_PACK_ENV_FILTER=off: guests see the process environment
	tenantLabel    bool
	policy         string
	auditLog       string
	port           int
	token          string
	maxConcurrency int
	strictEnv      bool
	envCheck       string
	tenantID       string
	guestOutput    string
}

// readServiceConfig collects every problem with the configuration.
func readServiceConfig(args []string, getenv func(string) string, stderr io.Writer) (serviceConfig, []string) {
	var c serviceConfig
	var problems []string
	fs := flag.NewFlagSet("packd serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.load.register(fs)
	fs.StringVar(&c.host, "host", "", "the address to listen on (default: every interface)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", getenv("PACKD_METRICS_ADDR"), `where /metrics listens ("off" turns it off; default $PACKD_METRICS_ADDR, else port 9464 on --host, or a free port when 9464 is taken)`)
	fs.BoolVar(&c.tenantLabel, "metrics-tenant-label", false, "label packd_calls_total with the tenant id (unbounded: off by default)")
	fs.StringVar(&c.policy, "policy", getenv("PACKD_POLICY"), "a JSON policy file of which tenants may call which tools (default $PACKD_POLICY)")
	fs.StringVar(&c.auditLog, "audit-log", getenv("PACKD_AUDIT_LOG"), "append one JSON line per call to this file (default $PACKD_AUDIT_LOG; off when empty)")
	fs.StringVar(&c.guestOutput, "guest-output", envOr(getenv, "PACKD_GUEST_OUTPUT", "records"), `pack code output: "records" (each line in a guest-output record on stderr) or "plain" (as written, on stdout and stderr, like the other pack services; default $PACKD_GUEST_OUTPUT, else records)`)
	if err := fs.Parse(args); err != nil {
		return c, []string{err.Error()}
	}
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "host" && c.host == "" {
			problems = append(problems, "--host must not be empty")
		}
	})
	problems = append(problems, c.load.check()...)
	if c.guestOutput != "records" && c.guestOutput != "plain" {
		problems = append(problems, fmt.Sprintf(`--guest-output (or PACKD_GUEST_OUTPUT) must be "records" or "plain", got %q`, c.guestOutput))
	}

	c.token = strings.TrimSpace(getenv(tokenEnv))
	switch {
	case c.token == "":
		problems = append(problems, tokenEnv+" is required")
	case strings.IndexFunc(c.token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		problems = append(problems, tokenEnv+" must not contain whitespace or control characters")
	}
	c.port = 8080
	if p := getenv("PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 || !digits(p) {
			problems = append(problems, fmt.Sprintf("PORT must be an integer from 0 to 65535, got %q", p))
		}
		c.port = n
	}
	c.maxConcurrency = server.DefaultMaxConcurrency
	if v := getenv("KINDGI_PACK_SERVICE_MAX_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || !digits(v) {
			problems = append(problems, fmt.Sprintf("KINDGI_PACK_SERVICE_MAX_CONCURRENCY must be a positive integer, got %q", v))
		}
		c.maxConcurrency = n
	}
	switch v := getenv("KINDGI_PACK_ENV_CHECK"); v {
	case "", "strict":
		c.envCheck, c.strictEnv = "strict", true
	case "warn":
		c.envCheck = "warn"
	default:
		problems = append(problems, fmt.Sprintf(`KINDGI_PACK_ENV_CHECK must be "strict" or "warn", got %q`, v))
	}
	switch v := getenv("KINDGI_PACK_ENV_FILTER"); v {
	case "", "on":
	case "off":
		c.envFilterOff = true
	default:
		problems = append(problems, fmt.Sprintf(`KINDGI_PACK_ENV_FILTER must be "on" or "off", got %q`, v))
	}
	c.tenantID = getenv("KINDGI_PACK_TENANT_ID")
	return c, problems
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// serveCmd is the process contract: configure, boot, listen, drain on SIGTERM.
func serveCmd(args []string, stdout, stderr io.Writer) int {
	rec := server.NewRecorder(stderr)
	cfg, problems := readServiceConfig(args, os.Getenv, stderr)
	if len(problems) > 0 {
		rec.Lifecycle("config-invalid", "error", "The pack service configuration is invalid", server.Field{Key: "problems", Value: problems})
		return exitError
	}
	// Pack code must never see the token, not even through a bug in the
	// environment filter: it leaves the process environment before any
	// module loads.
	_ = os.Unsetenv(tokenEnv)

	cfg.load.poolAuto = cfg.maxConcurrency
	hc, err := cfg.load.config(stdout)
	if err != nil {
		rec.Lifecycle("config-invalid", "error", "The pack service configuration is invalid", server.Field{Key: "problems", Value: []string{err.Error()}})
		return exitError
	}
	cfg.load.setGoMemoryLimit()
	// Pack code output never waits for its reader (the sandbox queues it)
	// and, by default, never reaches the record stream as it is written.
	var metricsOnce atomic.Pointer[server.Metrics]
	dropped := func(stream string) {
		if m := metricsOnce.Load(); m != nil {
			m.GuestLineDropped(stream)
		}
	}
	hc.Sandbox.DroppedLines = dropped
	hc.Sandbox.PoolEvents = func(ev sandbox.PoolEvent) {
		if m := metricsOnce.Load(); m != nil {
			m.PoolEvent(ev)
		}
	}
	if cfg.guestOutput == "records" {
		guest := rec.GuestRecords(func() { dropped("records") })
		defer guest.Close(time.Second) // after the pack's close has flushed into it
		hc.Sandbox.Stdout, hc.Sandbox.Stderr = guest.Stream("stdout"), guest.Stream("stderr")
		hc.GuestOutput = guest.Line
	} else {
		hc.Sandbox.Stderr = rec.Writer()
	}
	bootFailed := func(problems ...string) int {
		rec.Lifecycle("boot-failed", "error", "The pack service could not boot", server.Field{Key: "problems", Value: problems})
		return exitError
	}
	// The tenant pin is the server's (server.Config.TenantID): it checks
	// both the header and the call's ctx.tenantId.
	if cfg.policy != "" {
		p, err := host.LoadPolicy(cfg.policy)
		if err != nil {
			return bootFailed(err.Error())
		}
		hc.Gate = p
	}
	if cfg.envFilterOff {
		hc.PassEnv = passedEnv(os.Environ())
	}
	ctx := context.Background()
	pack, err := host.Load(ctx, hc)
	if err != nil {
		var le *host.LoadError
		problems := []string{err.Error()}
		if errors.As(err, &le) {
			problems = le.Problems
		}
		if pack != nil {
			_ = pack.Close(ctx)
		}
		return bootFailed(problems...)
	}
	defer pack.Close(ctx)

	if dropped := droppedEnv(os.Environ(), pack.GuestEnvNames()); len(dropped) > 0 {
		rec.Lifecycle("env-dropped", "info", fmt.Sprintf("Pack code will not see %d environment name(s) of this process", len(dropped)),
			server.Field{Key: "filter", Value: map[bool]string{false: "on", true: "off"}[cfg.envFilterOff]}, server.Field{Key: "names", Value: dropped})
	}
	missing := pack.MissingEnv(os.LookupEnv)
	if len(missing) > 0 {
		rec.Lifecycle("missing-env", "warn", "Required env names are not set: "+strings.Join(missing, ", "),
			server.Field{Key: "check", Value: cfg.envCheck}, server.Field{Key: "names", Value: missing})
	}
	reg := prometheus.NewRegistry()
	metrics, err := server.NewMetrics(reg, server.MetricsConfig{Pack: pack, Version: version, TenantLabel: cfg.tenantLabel, GoCollectors: true})
	if err != nil {
		return bootFailed(err.Error())
	}
	metricsOnce.Store(metrics)
	hooks := []server.Hook{server.CallRecords(rec)} // metrics run as a hook of their own (server.Config.Metrics)
	if cfg.auditLog != "" {
		audit, err := server.OpenAuditLog(cfg.auditLog, pack.Index.ArtifactVersion, metrics, rec)
		if err != nil {
			return bootFailed(err.Error())
		}
		defer audit.Close(5 * time.Second)
		hooks = append(hooks, audit)
	}
	srv, err := server.New(server.Config{
		Pack: pack, Token: cfg.token, MaxConcurrency: cfg.maxConcurrency,
		MissingEnv: missing, StrictEnv: cfg.strictEnv, TenantID: cfg.tenantID, Records: rec,
		Hooks: hooks, Metrics: metrics,
	})
	if err != nil {
		return bootFailed(err.Error())
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port)))
	if err != nil {
		return bootFailed("Cannot listen: " + err.Error())
	}
	port := ln.Addr().(*net.TCPAddr).Port
	listening := []server.Field{{Key: "port", Value: port}, {Key: "packId", Value: pack.Index.PackID},
		{Key: "artifactVersion", Value: pack.Index.ArtifactVersion}, {Key: "memoryBudgetMiB", Value: float64(cfg.load.memoryBudgetMiB)},
		{Key: "poolSize", Value: float64(hc.Sandbox.PoolSize)}}
	if cfg.metricsAddr != "off" {
		mln, err := listenMetrics(cfg.metricsAddr, cfg.host, rec)
		if err != nil {
			_ = ln.Close()
			return bootFailed("Cannot listen for metrics: " + err.Error())
		}
		msrv := &http.Server{
			Handler:           metricsHandler(reg),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
		}
		go func() {
			if err := msrv.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				rec.Lifecycle("metrics-stopped", "error", "/metrics stopped serving: "+err.Error())
			}
		}()
		defer msrv.Close()
		listening = append(listening, server.Field{Key: "metricsPort", Value: mln.Addr().(*net.TCPAddr).Port})
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(signals)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	rec.Lifecycle("listening", "info", fmt.Sprintf("Listening on port %d", port), listening...)

	select {
	case <-signals:
	case err := <-served:
		rec.Lifecycle("stopped", "error", "The pack service stopped: "+err.Error())
		return exitError
	}
	_ = srv.Drain(ctx) // writes the draining record

	<-served
	rec.Lifecycle("stopped", "info", "Stopped")
	return exitOK
}

// passedEnv is what pack code sees with KINDGI_PACK_ENV_FILTER=off: the
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

// defaultMetricsPort is where /metrics listens unless told otherwise.
const defaultMetricsPort = 9464

// listenMetrics listens where the operator said, or by default on port
// 9464 of the service's own host. Several services on one host is normal
// (one per pack, tests, sidecars): when the default port is taken, the
// metrics listen on a free port instead, said in a warning record and in
// the listening record's metricsPort. An address the operator set that
// cannot be bound fails the boot.
func listenMetrics(addr, host string, rec *server.Recorder) (net.Listener, error) {
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
		server.Field{Key: "metricsPort", Value: port}, server.Field{Key: "wanted", Value: defaultMetricsPort})
	return mln, nil
}

// metricsHandler serves the registry at /metrics (OpenMetrics when asked,
// which carries the trace id exemplars) and nothing else.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	return mux
}
