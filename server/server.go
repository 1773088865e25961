package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	// maxTimeout bounds kindgi-timeout-ms so a huge value cannot overflow.
	maxTimeout = 24 * time.Hour
)

// Config configures a Server. Pack and Token are required.
type Config struct {
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
	// Records receives the service's records; nil discards them.
	Records *Recorder
	// Hooks are told of every call after its answer (see Hook). nil means
	// CallRecords(Records) alone.
	Hooks []Hook
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
}

// Server is a pack service. Create it with New, run it with Serve, stop it
// with Drain (or Close).
type Server struct {
	cfg       Config
	tokenHash [32]byte
	e         *echo.Echo
	http      *http.Server
	sem       chan struct{} // one slot per in-flight invoke
	draining  atomic.Bool
	ready     atomic.Bool
	info      []byte
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
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 10 * time.Second
	}
	if cfg.Records == nil {
		cfg.Records = NewRecorder(io.Discard)
	}
	if cfg.MissingEnv == nil {
		cfg.MissingEnv = []string{}
	}
	if cfg.Hooks == nil {
		cfg.Hooks = []Hook{CallRecords(cfg.Records)}
	}
	if cfg.Metrics != nil && !slices.ContainsFunc(cfg.Hooks, func(h Hook) bool { m, ok := h.(*Metrics); return ok && m == cfg.Metrics }) {
		cfg.Hooks = append(slices.Clone(cfg.Hooks), cfg.Metrics)
	}
	s := &Server{
		cfg:       cfg,
		tokenHash: sha256.Sum256([]byte(cfg.Token)),
		sem:       make(chan struct{}, cfg.MaxConcurrency),
	}
	s.info = s.buildInfo()
	s.e = s.routes()
	s.http = &http.Server{
		Handler:           s.e,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	s.ready.Store(true)
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
// writes the `draining` record,
// waits for in-flight calls up to the drain timeout, then shuts the server
// down: answers already written are flushed, idle connections closed. Calls
// still running when the timeout passes are cut off and their guests
// cancelled.
func (s *Server) Drain(ctx context.Context) error {
	s.draining.Store(true)
	// Said only once new calls are refused, so that whoever reads the
	// record can rely on it.
	s.cfg.Records.Lifecycle("draining", "info", "Draining in-flight calls")
	// Taking every slot of the concurrency cap waits for every in-flight
	// call, and keeps any new one from starting.
	timer := time.NewTimer(s.cfg.DrainTimeout)
	defer timer.Stop()
	for range cap(s.sem) {
		select {
		case s.sem <- struct{}{}:
		case <-timer.C:
			return s.Close()
		case <-ctx.Done():
			return s.Close()
		}
	}
	// Every call has answered; give the last answers a moment to reach
	// their connections before closing them.
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.http.Shutdown(sctx); err != nil {
		return s.Close()
	}
	return nil
}

// Close closes the listener and every connection at once. Safe twice.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() { err = s.http.Close() })
	return err
}

const contentType = "application/json; charset=utf-8"

// send writes a JSON body with its content type and length.
func send(c echo.Context, status int, body []byte) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, contentType)
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
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

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		var he *echo.HTTPError
		if errors.As(err, &he) && he.Code == http.StatusNotFound {
			_ = sendError(c, http.StatusNotFound, "No route "+c.Request().URL.Path)
			return
		}
		_ = sendError(c, http.StatusInternalServerError, "Internal error")
	}
	e.Use(recoverMiddleware)
	e.Any("/v1/invoke", s.method(http.MethodPost, s.tokenAndTenant(s.invoke)))
	e.Any("/v1/info", s.method(http.MethodGet, s.tokenAndTenant(s.getInfo)))
	e.Any("/healthz", s.method(http.MethodGet, func(c echo.Context) error {
		return send(c, http.StatusOK, []byte(`{"status":"ok"}`))
	}))
	e.Any("/readyz", s.method(http.MethodGet, s.readyz))
	e.Any("/v1/tools/:id", s.method(http.MethodGet, s.tokenAndTenant(s.describe)))
	e.RouteNotFound("/*", func(c echo.Context) error {
		return sendError(c, http.StatusNotFound, "No route "+c.Request().URL.Path)
	})
	return e
}

// recoverMiddleware turns a panic in a handler into a 500; the process lives on.
func recoverMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				if !c.Response().Committed {
					err = sendError(c, http.StatusInternalServerError, "Internal error")
				}
			}
		}()
		return next(c)
	}
}

func (s *Server) method(m string, h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != m {
			return sendError(c, http.StatusMethodNotAllowed, "Use "+m)
		}
		return h(c)
	}
}

func (s *Server) tokenAndTenant(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		got := sha256.Sum256([]byte(c.Request().Header.Get("kindgi-pack-token")))
		if subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) != 1 {
			return s.refuse(c, refuseBadToken, "")
		}
		if pin := s.cfg.TenantID; pin != "" {
			tenant := c.Request().Header.Get("kindgi-tenant-id")
			if tenant != pin {
				r := refuseTenantPinned
				if tenant == "" {
					r = refuseTenantMissing
				}
				if c.Request().URL.Path == "/v1/invoke" {
					s.runHooks(Event{Time: time.Now(), Outcome: host.RefusalTenantMismatch,
						Status: r.status, TenantID: tenant,
						TraceID: traceIDFrom(c.Request().Header.Get("traceparent"))})
				}
				return s.refuse(c, r, "")
			}
		}
		return h(c)
	}
}

// unavailable answers the first 503 that applies (draining, missing env,
// not ready) and says whether it did.
func (s *Server) unavailable(c echo.Context) (bool, error) {
	switch {
	case s.draining.Load():
		return true, s.refuse(c, refuseDraining, "")
	case s.cfg.StrictEnv && len(s.cfg.MissingEnv) > 0:
		return true, s.refuse(c, refuseMissingEnv, "", "missingEnv", s.cfg.MissingEnv)
	case !s.ready.Load():
		return true, s.refuse(c, refuseNotReady, "")
	}
	return false, nil
}

func (s *Server) readyz(c echo.Context) error {
	if answered, err := s.unavailable(c); answered {
		return err
	}
	return send(c, http.StatusOK, []byte(`{"status":"ready"}`))
}

func (s *Server) buildInfo() []byte {
	idx := s.cfg.Pack.Index
	tools := make([]any, 0, len(idx.Tools))
	for _, t := range idx.Tools {
		o := &ojson.Object{Keys: []string{"id"}, Vals: []any{t.ID}}
		if t.Version != "" {
			o.Set("version", t.Version)
		}
		tools = append(tools, o)
	}
	checks := make([]string, 0, len(idx.Guardrails))
	for _, g := range idx.Guardrails {
		checks = append(checks, g.Check())
	}
	return ojson.Encode(&ojson.Object{
		Keys: []string{"protocol", "packId", "packVersion", "artifactVersion", "indexHash", "tools", "checks", "missingEnv"},
		Vals: []any{2.0, idx.PackID, idx.PackVersion, idx.ArtifactVersion, idx.Hash, tools, checks, s.cfg.MissingEnv},
	})
}

func (s *Server) getInfo(c echo.Context) error { return send(c, http.StatusOK, s.info) }

var digits = regexp.MustCompile(`^[0-9]+$`)

// timeoutFrom reads kindgi-timeout-ms; missing or invalid gives the default.
func timeoutFrom(h string) time.Duration {
	if !digits.MatchString(h) {
		return host.DefaultTimeout
	}
	ms, err := strconv.ParseInt(h, 10, 64)
	if err != nil || ms <= 0 {
		return host.DefaultTimeout
	}
	if ms > maxTimeout.Milliseconds() {
		return maxTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

func (s *Server) invoke(c echo.Context) error {
	if answered, err := s.unavailable(c); answered {
		return err
	}
	// The checks keep the protocol's order (the cap before the content
	// type and the body), but the slot is taken only once the body is in.
	if len(s.sem) == cap(s.sem) {
		return s.overloaded(c)
	}
	req := c.Request()
	if !strings.Contains(strings.ToLower(req.Header.Get(echo.HeaderContentType)), "application/json") {
		return s.refuse(c, refuseContentType, "")
	}
	body, refused := s.readBody(c)
	if refused != nil {
		return s.refuse(c, *refused, "")
	}
	select {
	case s.sem <- struct{}{}:
	default:
		return s.overloaded(c)
	}
	var event *Event
	defer func() {
		if event != nil {
			s.runHooks(*event) // after the answer, and after the slot is free
		}
	}()
	defer func() { <-s.sem }()
	if m := s.cfg.Metrics; m != nil {
		m.inFlight.Inc()
		defer m.inFlight.Dec()
	}
	admitted := time.Now()

	ctx := req.Context()
	if pin := s.cfg.TenantID; pin != "" {
		ctx = host.WithTenantPin(ctx, pin) // the body's half of the pin; the header's is checked above
	}
	out := s.cfg.Pack.Dispatch(ctx, body, timeoutFrom(req.Header.Get("kindgi-timeout-ms")))
	elapsed := time.Since(admitted)
	e := Event{
		Time: admitted, Parsed: out.Parsed, Target: out.Target, ID: out.ID, Version: out.Version,
		Outcome: "ok", Status: http.StatusOK, Duration: elapsed, Fuel: out.FuelUsed, MemoryBytes: out.MemoryBytes,
		TenantID: out.CtxString("tenantId"), ProjectID: out.CtxString("projectId"), OrgID: out.CtxString("orgId"),
		RunID: out.CtxString("runId"), RequestID: out.CtxString("requestId"),
		TraceID: traceIDFrom(req.Header.Get("traceparent")), SpanID: newSpanID(),
	}
	if out.Code != "" {
		e.Outcome = string(out.Code)
	}
	if out.Parsed {
		event = &e
	}
	if r := out.Refusal; r != nil {
		e.Outcome = r.Code
		rf, known := hostRefusals[r.Code]
		if !known || r.Code == host.RefusalGateFailed {
			// A code this service does not know fails closed, as a gate
			// that could not decide.
			err := r.Err
			if !known {
				err = fmt.Errorf("the gate refused with unknown code %q: %v", r.Code, r.Err)
				rf, r = refuseGateFailed, &host.Refusal{Code: host.RefusalGateFailed, Reason: "The call could not be checked", Err: err}
				e.Outcome = r.Code
			}
			s.cfg.Records.Record("error", "The gate failed; the call was refused", Field{"event", "gate-failed"},
				Field{"kind", "gate-failed"}, Field{"error", fmt.Sprint(err)})
		}
		e.Status = rf.status
		message := r.Reason
		if r.Code == host.RefusalOverloaded {
			message = "" // the table's: {"error":"overloaded"}
		}
		return s.refuse(c, rf, message)
	}
	h := c.Response().Header()
	h.Set("kindgi-duration-ms", strconv.FormatInt(elapsed.Milliseconds(), 10))
	h.Set("kindgi-artifact-version", s.cfg.Pack.Index.ArtifactVersion)
	return send(c, http.StatusOK, out.Response)
}

func (s *Server) overloaded(c echo.Context) error {
	if s.draining.Load() {
		return s.refuse(c, refuseDraining, "")
	}
	return s.refuse(c, refuseOverloaded, "")
}

// readBody reads an invoke body, bounded in size (MaxBodyBytes, refused on
// Content-Length alone when it says more) and in time (BodyTimeout). It
// returns the body, or the refusal to answer.
func (s *Server) readBody(c echo.Context) ([]byte, *refusal) {
	req := c.Request()
	limit := s.cfg.MaxBodyBytes
	if req.ContentLength > limit {
		s.discardBody(c)
		return nil, &refuseBodyTooLarge
	}
	// Without a real connection (tests through the handler) there is no
	// deadline to set; the reader then bounds only the size.
	_ = http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	body, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &refuseBodyTooSlow
		}
		return nil, &refuseUnreadableBody
	}
	if int64(len(body)) > limit {
		s.discardBody(c)
		return nil, &refuseBodyTooLarge
	}
	return body, nil
}

// Refusing a body too large: what of the rest is read and dropped before
// the answer, so that a client that writes its whole body before reading
// (Python's http.client and requests do) gets the 413 rather than a broken
// pipe, as with the other pack services. At most discardBytes more are
// read, for at most discardTime; a body longer still, or slower, gets the
// 413 and the connection closes.
const (
	discardBytes = 64 << 20
	discardTime  = 5 * time.Second
)

func (s *Server) discardBody(c echo.Context) {
	req := c.Request()
	if req.ContentLength > discardBytes+s.cfg.MaxBodyBytes {
		c.Response().Header().Set(echo.HeaderConnection, "close")
		return
	}
	_ = http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Now().Add(discardTime))
	n, err := io.Copy(io.Discard, io.LimitReader(req.Body, discardBytes))
	if err != nil || n == discardBytes {
		c.Response().Header().Set(echo.HeaderConnection, "close")
	}
}

var traceparent = regexp.MustCompile(`^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}`)

// traceIDFrom returns the trace id of a valid W3C traceparent, else "".
func traceIDFrom(h string) string {
	m := traceparent.FindStringSubmatch(strings.TrimSpace(h))
	if m == nil || m[1] == strings.Repeat("0", 32) || strings.HasPrefix(h, "ff") {
		return ""
	}
	return m[1]
}

func newSpanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
