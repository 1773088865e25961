package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kindgi/packd/host"
	"github.com/kindgi/packd/internal/ojson"
)

// Defaults of a zero Config.
const (
	DefaultMaxConcurrency = 32
	DefaultMaxBodyBytes   = 10 << 20 // 10 MiB
	DefaultDrainTimeout   = 8 * time.Second
)

// Config configures a Server. Pack and Token are required.
type Config struct {
	// Pack is the pack served first (Server.Replace serves another).
	Pack  *host.Pack
	Token string
	// MaxConcurrency caps in-flight /v1/invoke calls (default 32).
	MaxConcurrency int
	// MissingEnv is the index's required env names that are not set; with
	// StrictEnv the service is not ready while any is listed.
	MissingEnv []string
	StrictEnv  bool
	// TenantID pins the service to one tenant (protocol 2.7.0); empty: none.
	// The server checks both the kindgi-tenant-id header and each call's
	// ctx.tenantId (421 pack-tenant-mismatch).
	TenantID string
	// Log receives the service's log lines; nil discards them.
	Log *Log
	// Hooks are told of every call after its answer (see Hook). nil means
	// CallLines(Log) alone.
	Hooks []Hook
	// ReplayRecords, when set, gets the record of every recorded call
	// (host.Config.Record) once its answer is written.
	ReplayRecords *ReplayRecords
	// Tracing, when set, exports a span of every call to /v1/invoke (see
	// Tracing).
	Tracing *Tracing
	// Metrics, when set, counts refusals, in-flight calls, hook panics and
	// every call (it runs as a hook after those in Hooks unless Hooks
	// already holds it).
	Metrics *Metrics
	// MaxBodyBytes bounds a request body (default 10 MiB).
	MaxBodyBytes int64
	// DrainTimeout bounds how long Drain waits for in-flight calls (default 8 s).
	DrainTimeout time.Duration
	// ReadHeaderTimeout bounds how long a client may take to send its
	// headers (default 10 s), and BodyTimeout its invoke body (default
	// 10 s), against slow clients. A body is read before the call takes a
	// slot of the concurrency cap, so slow bodies cannot hold the cap.
	ReadHeaderTimeout, BodyTimeout time.Duration
	// TenantShareOff lets one tenant hold the whole concurrency cap and
	// memory budget while others call. By default a tenant holds at most
	// ceil(cap / n) of the cap, and its running calls ceil(budget / n) of
	// the pack's memory budget, while n tenants call (a call in flight, or
	// one begun or ended within TenantShareWindow, default 2 s); a tenant
	// alone holds it all.
	TenantShareOff    bool
	TenantShareWindow time.Duration
	// TenantSharePause is how long a call refused for its tenant's share
	// waits before its 503 (default 100 ms; negative: none), its slot
	// already free: a tenant that retries at once cannot make its
	// refusals the load that slows the others.
	TenantSharePause time.Duration
}

// Server is a pack service. Create it with New, run it with Serve, stop it
// with Drain (or Close).
type Server struct {
	cfg       Config
	tokenHash [32]byte
	e         *echo.Echo
	http      *http.Server
	sem       chan struct{}  // one slot per in-flight invoke
	admit     host.Admission // each tenant's share of sem; nil: none
	draining  atomic.Bool
	// cut is done when a drain's timeout passes: every call still running
	// is cancelled through it (the base of every request's context), and
	// answers "cancelled".
	cut       context.Context
	cutCalls  context.CancelFunc
	gen       atomic.Pointer[generation] // the pack served now
	closeOnce sync.Once
}

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("server: bad config")

// New builds a server around a loaded pack. It is ready at once: the pack
// has loaded every module before New is called.
func New(cfg Config) (*Server, error) {
	if cfg.Pack == nil || cfg.Token == "" {
		return nil, fmt.Errorf("%w: a pack and a token are required", ErrConfig)
	}
	if cfg.MaxConcurrency <= 0 {
		cfg.MaxConcurrency = DefaultMaxConcurrency
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = 10 * time.Second
	}
	if cfg.TenantShareWindow <= 0 {
		cfg.TenantShareWindow = DefaultTenantShareWindow
	}
	if cfg.TenantSharePause == 0 {
		cfg.TenantSharePause = DefaultTenantSharePause
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 10 * time.Second
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
	s := &Server{
		cfg:       cfg,
		tokenHash: sha256.Sum256([]byte(cfg.Token)),
		sem:       make(chan struct{}, cfg.MaxConcurrency),
	}
	s.cut, s.cutCalls = context.WithCancel(context.Background())
	if !cfg.TenantShareOff {
		s.admit = newFairShare(cfg.MaxConcurrency, cfg.Pack.MemoryBudget(), cfg.TenantShareWindow).admit
	}
	s.gen.Store(newGeneration(cfg.Pack, cfg.MissingEnv))
	s.e = s.routes()
	s.http = &http.Server{
		Handler:           s.e,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		// Every request's context descends from cut: a drain that times out
		// cancels the calls still running through it, their connections
		// open for their answers, at no cost to a call.
		BaseContext: func(net.Listener) context.Context { return s.cut },
	}
	return s, nil
}

// Handler is the server's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.e }

// Echo gives an embedder the echo instance, e.g. to add routes.
func (s *Server) Echo() *echo.Echo { return s.e }

// Serve answers on ln until Drain or Close. It returns nil after a drain.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Drain stops taking calls (new invokes and /readyz answer 503 draining),
// writes the `draining` log line, waits for in-flight calls up to the drain
// timeout (or until ctx is done), then shuts the server down: answers
// already written are flushed, idle connections closed. Calls still
// running when the timeout passes are cut: their guests are cancelled,
// and each answers `cancelled` with its call record and audit line, as
// any call does, within cutGrace; only what outlasts that is cut off
// with its connection.
func (s *Server) Drain(ctx context.Context) error {
	s.draining.Store(true)
	// Said only once new calls are refused, so that whoever reads the
	// log can rely on it.
	s.cfg.Log.Lifecycle("draining", "info", "Draining in-flight calls")
	// Taking every slot of the concurrency cap waits for every in-flight
	// call, and keeps any new one from starting.
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
		take(cutGrace, nil)
	}
	// Every call has answered; give the last answers (and their hooks) a
	// moment to reach their connections before closing them.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cutGrace)
	defer cancel()
	if err := s.http.Shutdown(sctx); err != nil {
		return s.Close(ctx)
	}
	return nil
}

// cutGrace is how long calls a drain cut have to answer: a guest stops
// within a fuel slice of its cancellation, an outbound request at once.
const cutGrace = 2 * time.Second

// Close closes the listener and every connection at once, cancelling the
// calls still running (ctx is not waited on). Safe twice.
func (s *Server) Close(context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		s.cutCalls()
		err = s.http.Close()
	})
	return err
}

const contentType = "application/json; charset=utf-8"

// contentTypeValue is the Content-Type header's value, one slice for
// every answer: net/http only reads a header's values, and Header.Add
// appends to a full slice, which copies it.
var contentTypeValue = []string{contentType}

// send writes a JSON body with its content type and length.
func send(c echo.Context, status int, body []byte) error {
	h := c.Response().Header()
	h[echo.HeaderContentType] = contentTypeValue
	h[echo.HeaderContentLength] = []string{strconv.Itoa(len(body))}
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(body)
	return err
}

func errorBody(msg string, extra ...any) []byte {
	o := &ojson.Object{Keys: []string{"error"}, Vals: []any{msg}}
	for i := 0; i+1 < len(extra); i += 2 {
		o.Set(extra[i].(string), extra[i+1])
	}
	return ojson.Encode(o)
}

func sendError(c echo.Context, status int, msg string, extra ...any) error {
	return send(c, status, errorBody(msg, extra...))
}
