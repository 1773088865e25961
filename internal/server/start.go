package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kindgi/packd/internal/service"
)

// StartConfig is a whole running pack service with its HTTP face: the
// service (service.StartConfig), and where and how it is served. `packd
// serve` fills it from flags and the environment; Start does the rest.
type StartConfig struct {
	// Service is the pack, how calls are admitted, and what is kept beside
	// them. Its Log is the one below.
	Service service.StartConfig
	// HTTP is the HTTP face's config: Token and the timeouts. Start sets
	// its Service.
	HTTP Config
	// Host and Port are where calls are served (Port 0: a free port).
	Host string
	Port int
	// TLS, when On, serves calls over TLS (mutual with a client CA).
	TLS TLSConfig
	// MetricsAddr is where /metrics listens: "" for port 9464 of Host (a
	// free port of Host when 9464 is taken, said in a metrics-port-taken
	// line), "off", or an address, which must be free.
	MetricsAddr string
	// MemoryBudgetMiB is the process's memory budget, said in the
	// listening line.
	MemoryBudgetMiB int64
	// Faces, when set, makes the other faces served beside the HTTP one
	// (HTTP.Routes) once the service has started; each route's Close runs
	// at shutdown, after the listener has stopped.
	Faces func(*service.Service) ([]Route, error)
	// Log receives the service's log lines; nil discards them.
	Log *service.Log
}

// Running is a pack service served over HTTP, from Start to Shutdown.
type Running struct {
	log      *service.Log
	audit    bool // the service writes an audit log
	svc      *service.Service
	srv      *Server
	ln       net.Listener
	certs    *certificates // nil without TLS
	metrics  *http.Server  // nil when off
	routes   []Route       // the other faces, closed at teardown
	serving  bool          // the HTTP server owns ln
	done     chan struct{} // closed when the HTTP server has stopped
	served   error         // why it stopped on its own, if it did
	shutdown sync.Once
	err      error
}

// Start starts the service (service.Start) and serves it: once every
// listener is up it writes the listening line. When it cannot start, it
// writes a boot-failed line naming every problem (the service's own, if
// the service did not start), releases what it took, and returns the
// error.
func Start(ctx context.Context, cfg StartConfig) (*Running, error) {
	log := cfg.Log
	if log == nil {
		log = service.NewLog(io.Discard)
	}
	cfg.Service.Log = log
	svc, err := service.Start(ctx, cfg.Service)
	if err != nil {
		return nil, err // said by service.Start
	}
	r := &Running{log: log, svc: svc, audit: cfg.Service.AuditLog != "", done: make(chan struct{})}
	if err := r.start(cfg); err != nil {
		r.teardown()
		log.Lifecycle("boot-failed", "error", "The pack service could not boot", service.ProblemFields(err)...)
		return nil, err
	}
	return r, nil
}

func (r *Running) start(cfg StartConfig) error {
	log, pack := r.log, r.svc.Pack()
	hc := cfg.HTTP
	hc.Service = r.svc
	if cfg.Faces != nil {
		routes, err := cfg.Faces(r.svc)
		if err != nil {
			return err
		}
		hc.Routes, r.routes = append(hc.Routes, routes...), routes
	}
	var err error
	if r.srv, err = New(hc); err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if cfg.TLS.On() {
		if tlsCfg, r.certs, err = serverTLS(cfg.TLS); err != nil {
			return err
		}
	}
	if r.ln, err = net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))); err != nil {
		return fmt.Errorf("Cannot listen: %w", err)
	}
	port := r.ln.Addr().(*net.TCPAddr).Port
	listening := []service.Field{{Key: "port", Value: port}, {Key: "packId", Value: pack.Index().PackID},
		{Key: "artifactVersion", Value: pack.Index().ArtifactVersion}, {Key: "memoryBudgetMiB", Value: float64(cfg.MemoryBudgetMiB)},
		{Key: "poolSize", Value: float64(cfg.Service.Load.Sandbox.PoolSize)}}
	if cfg.Service.Traces {
		listening = append(listening, service.Field{Key: "traces", Value: "otlp"})
	}
	// Whether the pack had to be signed, said once: without --trust any
	// index and modules beside it load.
	signatures := "not checked (no --trust)"
	if n := len(cfg.Service.Load.Trust); n > 0 {
		signatures = fmt.Sprintf("required (%d trusted key(s))", n)
	}
	listening = append(listening, service.Field{Key: "signatures", Value: signatures})
	if tlsCfg != nil {
		r.ln = tls.NewListener(r.ln, tlsCfg)
		listening = append(listening, service.Field{Key: "tls", Value: map[bool]string{false: "on", true: "mutual"}[cfg.TLS.ClientCAFile != ""]})
	}
	if cfg.MetricsAddr != "off" {
		mln, err := listenMetrics(cfg.MetricsAddr, cfg.Host, log)
		if err != nil {
			return fmt.Errorf("Cannot listen for metrics: %w", err)
		}
		r.metrics = &http.Server{Handler: metricsHandler(r.svc.Registry()), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
		go func() {
			if err := r.metrics.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Lifecycle("metrics-stopped", "error", "/metrics stopped serving: "+err.Error())
			}
		}()
		listening = append(listening, service.Field{Key: "metricsPort", Value: mln.Addr().(*net.TCPAddr).Port})
	}
	r.serving = true
	go func() {
		r.served = r.srv.Serve(r.ln)
		close(r.done)
	}()
	log.Lifecycle("listening", "info", fmt.Sprintf("Listening on port %d", port), listening...)
	return nil
}

// Service is the service served.
func (r *Running) Service() *service.Service { return r.svc }

// Reload reloads the pack (service.Service.Reload).
func (r *Running) Reload(ctx context.Context) error { return r.svc.Reload(ctx) }

// Reopen reopens what the service writes to and reads from files and may
// have been replaced under it: the audit log (rotated by logrotate, which
// renames it and then signals) and the TLS certificate and key. What
// cannot be reopened stays as it was. It writes a reopened line, or a
// reopen-failed line listing every problem, and returns them.
func (r *Running) Reopen() []string {
	var problems []string
	if err := r.svc.Reopen(); err != nil {
		problems = append(problems, err.Error())
	}
	if r.certs != nil {
		if err := r.certs.load(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		r.log.Lifecycle("reopen-failed", "error", "Could not reopen every file; what failed stays as it was", service.Field{Key: "problems", Value: problems})
	} else {
		r.log.Lifecycle("reopened", "info", "Reopened the audit log and the TLS certificate",
			service.Field{Key: "auditLog", Value: r.audit}, service.Field{Key: "tls", Value: r.certs != nil})
	}
	return problems
}

// Addr is where calls are served.
func (r *Running) Addr() net.Addr { return r.ln.Addr() }

// Done is closed when the service has stopped serving: after Shutdown's
// drain, or on its own when its listener fails (call Shutdown then too).
func (r *Running) Done() <-chan struct{} { return r.done }

// Shutdown drains the calls in flight (Server.Drain; a service that has
// already stopped on its own is not drained), then closes the metrics
// listener and the service (service.Service.Close: the audit log, the
// pack and its modules, the pack code output), and writes the stopped
// line last. It returns why the service stopped on its own, if it did.
// Safe twice.
func (r *Running) Shutdown(ctx context.Context) error {
	r.shutdown.Do(func() {
		select {
		case <-r.done:
		default:
			_ = r.srv.Drain(ctx) // writes the draining line
			<-r.done
		}
		r.teardown()
		if r.err = r.served; r.err != nil {
			r.log.Lifecycle("stopped", "error", "The pack service stopped: "+r.err.Error())
			return
		}
		r.log.Lifecycle("stopped", "info", "Stopped")
	})
	return r.err
}

// teardown closes what the service holds, in order; what was never opened
// is skipped.
func (r *Running) teardown() {
	if !r.serving && r.ln != nil {
		_ = r.ln.Close()
	}
	if r.metrics != nil {
		_ = r.metrics.Close()
	}
	for _, rt := range r.routes {
		if rt.Close != nil {
			_ = rt.Close(context.Background())
		}
	}
	_ = r.svc.Close(context.Background())
}

// defaultMetricsPort is where /metrics listens unless told otherwise.
const defaultMetricsPort = 9464

// listenMetrics listens where the operator said, or by default on port
// 9464 of the service's own host. Several services on one host is normal
// (one per pack, tests, sidecars): when the default port is taken, the
// metrics listen on a free port instead, said in a warning line and in
// the listening line's metricsPort. An address the operator set that
// cannot be bound fails the boot.
func listenMetrics(addr, host string, log *service.Log) (net.Listener, error) {
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
	log.Lifecycle("metrics-port-taken", "warn",
		fmt.Sprintf("Port %d is taken (another service on this host?): /metrics listens on port %d", defaultMetricsPort, port),
		service.Field{Key: "metricsPort", Value: port}, service.Field{Key: "wanted", Value: defaultMetricsPort})
	return mln, nil
}

// metricsHandler serves the registry at /metrics (OpenMetrics when asked,
// which carries the trace id exemplars) and nothing else.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	return mux
}
