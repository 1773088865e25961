package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/lineq"
	"github.com/kindgi/packd/internal/oci"
	"github.com/kindgi/packd/internal/server"
	"github.com/kindgi/packd/internal/service"
)

const tokenEnv = "KINDGI_PACK_SERVICE_TOKEN"

// logFlushWait bounds how long packd serve waits, as it exits, for its
// last log lines to be written (stderr may be a pipe nobody reads).
const logFlushWait = 2 * time.Second

// serviceConfig is the process contract's configuration, read from flags and
// the environment.
type serviceConfig struct {
	load           loadFlags
	record         recordFlags
	host           string
	metricsAddr    string
	envFilterOff   bool // KINDGI_PACK_ENV_FILTER=off: guests see the process environment
	tenantLabel    bool
	policy         string
	auditLog       string
	usageLog       string
	watch          bool
	ociPoll        time.Duration
	usageInterval  time.Duration
	tls            server.TLSConfig
	port           int
	token          string
	maxConcurrency int
	strictEnv      bool
	tenantID       string
	guestOutput    string
	tenantShare    string
	traces         bool // OpenTelemetry spans over OTLP/HTTP (tracesFrom)
	mcp            string
	help           bool // -h: print the flags, serve nothing
}

// serveFlags are packd serve's flags, their defaults read from getenv.
func serveFlags(c *serviceConfig, getenv func(string) string) *flag.FlagSet {
	fs := flag.NewFlagSet("packd serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.load.register(fs, getenv)
	c.record.register(fs, getenv, true)
	fs.StringVar(&c.host, "host", "", "the address to listen on (default: every interface)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", getenv("PACKD_METRICS_ADDR"), `where /metrics listens ("off" turns it off; default $PACKD_METRICS_ADDR, else port 9464 on --host, or a free port when 9464 is taken)`)
	fs.BoolVar(&c.tenantLabel, "metrics-tenant-label", false, "label packd_calls_total with the tenant id (unbounded: off by default)")
	fs.StringVar(&c.policy, "policy", getenv("PACKD_POLICY"), "a JSON policy file of which tenants may call which tools (default $PACKD_POLICY)")
	fs.StringVar(&c.auditLog, "audit-log", getenv("PACKD_AUDIT_LOG"), "append one JSON line per call to this file (default $PACKD_AUDIT_LOG; off when empty)")
	fs.BoolVar(&c.watch, "watch", getenv("PACKD_WATCH") == "on", "reload when the index, its signature or a module changes on disk (a ConfigMap's swap, a sync sidecar), as SIGHUP does (default: $PACKD_WATCH=on)")
	c.ociPoll = envDuration(getenv, "PACKD_OCI_POLL", defaultOCIPoll)
	fs.DurationVar(&c.ociPoll, "oci-poll", c.ociPoll, "with --watch and an --index oci://…:tag, how often the tag's digest is asked for; a new one reloads (default $PACKD_OCI_POLL, else 30s)")
	fs.StringVar(&c.usageLog, "usage-log", getenv("PACKD_USAGE_LOG"), "append one JSON line per tenant per --usage-interval to this file: what its calls used (default $PACKD_USAGE_LOG; off when empty)")
	c.usageInterval = envDuration(getenv, "PACKD_USAGE_INTERVAL", service.DefaultUsageInterval)
	fs.DurationVar(&c.usageInterval, "usage-interval", c.usageInterval, "how long each line of --usage-log covers (default $PACKD_USAGE_INTERVAL, else 1m)")
	fs.StringVar(&c.tls.CertFile, "tls-cert", getenv("PACKD_TLS_CERT"), "serve calls over TLS with this certificate, PEM (with --tls-key; default $PACKD_TLS_CERT; off when empty)")
	fs.StringVar(&c.tls.KeyFile, "tls-key", getenv("PACKD_TLS_KEY"), "the TLS certificate's private key, PEM (default $PACKD_TLS_KEY)")
	fs.StringVar(&c.tls.ClientCAFile, "tls-client-ca", getenv("PACKD_TLS_CLIENT_CA"), "mutual TLS: every client presents a certificate of these CAs, PEM (default $PACKD_TLS_CLIENT_CA)")
	fs.StringVar(&c.tenantShare, "tenant-share", envOr(getenv, "PACKD_TENANT_SHARE", "on"), `"on": while several tenants call, each holds at most its share of the concurrency cap and of the memory budget (default $PACKD_TENANT_SHARE, else on); "off": one tenant may hold it all`)
	registerMCP(fs, &c.mcp, getenv, true)
	fs.StringVar(&c.guestOutput, "guest-output", envOr(getenv, "PACKD_GUEST_OUTPUT", "records"), `pack code output: "records" (each line in a guest-output record on stderr) or "plain" (as written, on stdout and stderr, like the other pack services; default $PACKD_GUEST_OUTPUT, else records)`)
	return fs
}

// serveEnvironment is what packd serve reads from its environment besides
// the flags' defaults.
const serveEnvironment = `environment:
  KINDGI_PACK_SERVICE_TOKEN            the token callers send (required)
  PORT                                 the port calls are served on (default 8080)
  KINDGI_PACK_SERVICE_MAX_CONCURRENCY  calls in flight at once (default 32)
  KINDGI_PACK_TENANT_ID                pin the service to one tenant
  KINDGI_PACK_ENV_CHECK                "strict" (default: not ready while a required env name is missing) or "warn"
  KINDGI_PACK_ENV_FILTER               "on" (default: pack code sees only the index's env names) or "off"
  OTEL_EXPORTER_OTLP_ENDPOINT          export OpenTelemetry spans over OTLP/HTTP there (off by default; also
                                       OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp; the
                                       other OTEL_* variables as OpenTelemetry defines them)
`

// serveUsage prints packd serve's flags and environment.
func serveUsage(w io.Writer) {
	fmt.Fprint(w, "usage: packd [serve] [flags]\n\nflags:\n")
	var c serviceConfig
	fs := serveFlags(&c, os.Getenv)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, "\n"+serveEnvironment)
}

// readServiceConfig collects every problem with the configuration.
// stdio reads it for packd mcp, whose one client is on its stdin and
// stdout: no token, no port.
func readServiceConfig(args []string, getenv func(string) string, stdio bool) (serviceConfig, []string) {
	var c serviceConfig
	var problems []string
	fs := serveFlags(&c, getenv)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.help = true
			return c, nil
		}
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
	if c.ociPoll < time.Second {
		problems = append(problems, "--oci-poll (or PACKD_OCI_POLL) must be a duration of at least 1s")
	}
	problems = append(problems, c.record.check()...)
	if c.usageInterval < time.Second || c.usageInterval > 24*time.Hour {
		problems = append(problems, "--usage-interval (or PACKD_USAGE_INTERVAL) must be a duration from 1s to 24h")
	}
	if c.tenantShare != "on" && c.tenantShare != "off" {
		problems = append(problems, fmt.Sprintf(`--tenant-share (or PACKD_TENANT_SHARE) must be "on" or "off", got %q`, c.tenantShare))
	}
	if (c.tls.CertFile == "") != (c.tls.KeyFile == "") {
		problems = append(problems, "--tls-cert and --tls-key (or PACKD_TLS_CERT and PACKD_TLS_KEY) go together: give both or neither")
	}
	if c.tls.ClientCAFile != "" && !c.tls.On() {
		problems = append(problems, "--tls-client-ca (or PACKD_TLS_CLIENT_CA) needs --tls-cert and --tls-key: mutual TLS is TLS")
	}
	if c.guestOutput != "records" && c.guestOutput != "plain" {
		problems = append(problems, fmt.Sprintf(`--guest-output (or PACKD_GUEST_OUTPUT) must be "records" or "plain", got %q`, c.guestOutput))
	}

	problems = append(problems, checkMCP(c.mcp, c.host, stdio)...)
	c.token = strings.TrimSpace(getenv(tokenEnv))
	switch {
	case stdio:
	case c.token == "":
		problems = append(problems, tokenEnv+" is required")
	case strings.IndexFunc(c.token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		problems = append(problems, tokenEnv+" must not contain whitespace or control characters")
	}
	c.port = 8080
	if p := getenv("PORT"); p != "" && !stdio {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 || !digits(p) {
			problems = append(problems, fmt.Sprintf("PORT must be an integer from 0 to 65535, got %q", p))
		}
		c.port = n
	}
	c.maxConcurrency = service.DefaultMaxConcurrency
	if v := getenv("KINDGI_PACK_SERVICE_MAX_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || !digits(v) {
			problems = append(problems, fmt.Sprintf("KINDGI_PACK_SERVICE_MAX_CONCURRENCY must be a positive integer, got %q", v))
		}
		c.maxConcurrency = n
	}
	switch v := getenv("KINDGI_PACK_ENV_CHECK"); v {
	case "", "strict":
		c.strictEnv = true
	case "warn":
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
	var tp []string
	c.traces, tp = tracesFrom(getenv)
	problems = append(problems, tp...)
	return c, problems
}

// batchedLog is the service's log on w: its lines go out in batches (one
// write(2) per line was a system call per call served, and a wake-up of
// w's reader when it is a pipe); flush writes out what is queued.
func batchedLog(w io.Writer) (rec *service.Log, flush func()) {
	lines := lineq.NewBatch(w)
	return service.NewLog(lines), func() {
		ctx, cancel := context.WithTimeout(context.Background(), logFlushWait)
		defer cancel()
		_ = lines.Close(ctx)
	}
}

// prepare makes the service's start config of a config read with problems
// (a config-invalid line, and false, when there are any): the token leaves
// the process environment, the load config is made (pack code's plain
// output to guestOut), the cache's lines are written and the Go memory
// limit set.
func (cfg *serviceConfig) prepare(problems []string, rec *service.Log, guestOut io.Writer) (service.StartConfig, bool) {
	invalid := func(problems []string) (service.StartConfig, bool) {
		rec.Lifecycle("config-invalid", "error", "The pack service configuration is invalid", service.Field{Key: "problems", Value: problems})
		return service.StartConfig{}, false
	}
	if cfg.policy != "" {
		// A policy that cannot be read is a bad config, named now (Start
		// reads it again, and each reload anew).
		if _, err := host.LoadPolicy(cfg.policy); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return invalid(problems)
	}
	// Pack code must never see the token, not even through a bug in the
	// environment filter: it leaves the process environment before any
	// module loads.
	_ = os.Unsetenv(tokenEnv)
	cfg.load.poolAuto = cfg.maxConcurrency
	cfg.load.onPull = func(p oci.Pulled) {
		rec.Lifecycle("pack-pulled", "info", pulledSaying(cfg.load.index, p),
			service.Field{Key: "ref", Value: cfg.load.index}, service.Field{Key: "digest", Value: p.Digest},
			service.Field{Key: "bytes", Value: int(p.Bytes)}, service.Field{Key: "cached", Value: p.Cached})
	}
	hc, err := cfg.load.config(guestOut)
	if err != nil {
		return invalid([]string{err.Error()})
	}
	if cfg.load.cacheWarning != "" {
		rec.Lifecycle("cache-unavailable", "warn", cfg.load.cacheWarning)
	}
	if cfg.load.cacheNote != "" {
		rec.Lifecycle("cache-read-only", "info", cfg.load.cacheNote)
	}
	cfg.load.setGoMemoryLimit()
	hc.Record = cfg.record.config()
	return service.StartConfig{
		Load: hc,
		Calls: service.Config{MaxConcurrency: cfg.maxConcurrency,
			StrictEnv: cfg.strictEnv, TenantID: cfg.tenantID, TenantShareOff: cfg.tenantShare == "off"},
		Policy: cfg.policy, MetricsTenantLabel: cfg.tenantLabel, AuditLog: cfg.auditLog, Traces: cfg.traces,
		UsageLog: cfg.usageLog, UsageInterval: cfg.usageInterval,
		RecordDir: cfg.record.dir, RecordMaxBytes: cfg.record.totalMiB << 20,
		GuestOutput: cfg.guestOutput, Environ: os.Environ(), EnvFilterOff: cfg.envFilterOff,
		Version: versionString(), Log: rec,
	}, true
}

// tracesFrom decides from the standard OTEL_* variables whether packd
// exports spans: off unless an OTLP endpoint is named or
// OTEL_TRACES_EXPORTER is "otlp"; "none" or OTEL_SDK_DISABLED=true turn it
// off. packd exports OTLP over HTTP only.
func tracesFrom(getenv func(string) string) (bool, []string) {
	var problems []string
	on := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	switch v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v {
	case "":
	case "otlp":
		on = true
	case "none":
		on = false
	default:
		problems = append(problems, fmt.Sprintf(`OTEL_TRACES_EXPORTER must be "otlp" or "none" (packd exports OTLP over HTTP), got %q`, v))
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if v := getenv(name); v != "" {
			if why := badEndpoint(v); why != "" {
				problems = append(problems, fmt.Sprintf("%s must be an http or https URL with a host (and a port from 1 to 65535, when it names one): %q %s", name, v, why))
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := getenv(name); v != "" && v != "http/protobuf" && v != "http/json" {
			problems = append(problems, fmt.Sprintf(`%s must be "http/protobuf" or "http/json" (packd exports OTLP over HTTP), got %q`, name, v))
		}
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		on = false
	}
	return on, problems
}

// badEndpoint says what is wrong with an OTLP/HTTP endpoint, or "".
func badEndpoint(v string) string {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "has no http or https scheme"
	case u.Hostname() == "":
		return "names no host"
	}
	if p := u.Port(); p != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "names no port a collector could listen on"
		}
	}
	return ""
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

// serveCmd is the process contract: configure, boot, listen, drain on
// SIGTERM. The service itself is server.Start's (service.Start's, served over HTTP).
func serveCmd(args []string, stdout, stderr io.Writer) int {
	code, _ := serveWith(args, os.Getenv, stdout, stderr, nil)
	return code
}

// serveWith serves as packd serve does, with the environment getenv, and
// beside, when set, running beside the service (on a goroutine of its
// own, with a context cancelled as the service stops) until it stops.
// loadErr is why the service did not start when its pack did not load
// (said in the boot-failed record too).
func serveWith(args []string, getenv func(string) string, stdout, stderr io.Writer, beside func(context.Context, *server.Running)) (code int, loadErr *host.LoadError) {
	rec, closeLog := batchedLog(stderr)
	defer closeLog()
	cfg, problems := readServiceConfig(args, getenv, false)
	if cfg.help {
		serveUsage(stdout)
		return exitOK, nil
	}
	sc, ok := cfg.prepare(problems, rec, stdout)
	if !ok {
		return exitError, nil
	}
	faces := mcpRoute(&sc.Load, cfg)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt, syscall.SIGHUP)
	defer signal.Stop(signals)
	ctx := context.Background()
	svc, err := server.Start(ctx, server.StartConfig{
		Service: sc,
		HTTP:    server.Config{Token: cfg.token}, Host: cfg.host, Port: cfg.port, TLS: cfg.tls,
		MetricsAddr: cfg.metricsAddr, MemoryBudgetMiB: cfg.load.memoryBudgetMiB, Log: rec,
		Faces: faces,
	})
	if err != nil {
		errors.As(err, &loadErr)
		return exitError, loadErr // said in the boot-failed record
	}
	// SIGHUP reopens the audit log and the TLS certificate and reloads the
	// pack, on a goroutine of its own (the pack served goes on, and a
	// SIGTERM is not kept waiting: it cancels the load); SIGHUPs that come
	// during a reload make one more after it. SIGTERM (or Ctrl-C) drains
	// and stops.
	reloadCtx, cancelReload := context.WithCancel(ctx)
	hup := make(chan struct{}, 1)
	reloaderDone, besideDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(reloaderDone)
		for range hup {
			svc.Reopen()
			_ = svc.Reload(reloadCtx) // said in its record
		}
	}()
	go func() {
		defer close(besideDone)
		if beside != nil {
			beside(reloadCtx, svc)
		}
	}()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		ask := func() {
			select {
			case hup <- struct{}{}:
			default: // one is waiting already
			}
		}
		warn := func(m string) { rec.Lifecycle("watch-failed", "warn", m) }
		switch {
		case !cfg.watch:
		case cfg.load.puller != nil:
			// A tag that moves reloads as SIGHUP does.
			watchTag(reloadCtx, cfg.load.puller, cfg.ociPoll, ask, warn)
		default:
			// A change on disk reloads as SIGHUP does.
			watchPack(reloadCtx, sc.Load.IndexPath, sc.Load.ModuleRoot, sc.Load.SignaturePath, ask, warn)
		}
	}()
	for stop := false; !stop; {
		select {
		case sig := <-signals:
			if sig == syscall.SIGHUP {
				select {
				case hup <- struct{}{}:
				default: // one is waiting already
				}
				continue
			}
			stop = true
		case <-svc.Done():
			stop = true
		}
	}
	cancelReload()
	<-watchDone // before hup closes: the watcher sends on it
	close(hup)
	<-reloaderDone
	<-besideDone
	if svc.Shutdown(ctx) != nil {
		return exitError, nil
	}
	return exitOK, nil
}
