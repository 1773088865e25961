package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/service"
)

// Defaults of a zero Config.
const (
	DefaultMaxBodyBytes = 10 << 20 // 10 MiB
)

// Config configures a Server. Service and Token are required.
type Config struct {
	// Service runs the calls (and answers /readyz, /v1/info and describe).
	Service *service.Service
	Token   string
	// MaxBodyBytes bounds a request body (default 10 MiB).
	MaxBodyBytes int64
	// ReadHeaderTimeout bounds how long a client may take to send its
	// headers (default 10 s), and BodyTimeout its invoke body (default
	// 10 s), against slow clients. A body is read before the call takes a
	// slot of the concurrency cap, so slow bodies cannot hold the cap.
	ReadHeaderTimeout, BodyTimeout time.Duration
	// Routes are other faces served on the same listener (MCP's /mcp),
	// each with its own authentication: every method on Path goes to its
	// Handler.
	Routes []Route
}

// Route is another face on the listener: its path and its handler, and
// what closes it once the listener has stopped (nil: nothing).
type Route struct {
	Path    string
	Handler http.Handler
	Close   func(context.Context) error
}

// Server is the service's HTTP face. Create it with New, run it with
// Serve, stop it with Drain (or Close).
type Server struct {
	cfg       Config
	svc       *service.Service
	tokenHash [32]byte
	e         *echo.Echo
	http      *http.Server
	// version is the Kindgi-Artifact-Version header's value, shared by
	// every answer while the pack served is the same (see contentTypeValue).
	version   atomic.Pointer[[]string]
	closeOnce sync.Once
}

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("server: bad config")

// New builds the HTTP face of a service.
func New(cfg Config) (*Server, error) {
	if cfg.Service == nil || cfg.Token == "" {
		return nil, fmt.Errorf("%w: a service and a token are required", ErrConfig)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = 10 * time.Second
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 10 * time.Second
	}
	s := &Server{
		cfg:       cfg,
		svc:       cfg.Service,
		tokenHash: sha256.Sum256([]byte(cfg.Token)),
	}
	s.e = s.routes()
	s.http = &http.Server{
		Handler:           s.e,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		// Every request's context descends from the service's: a drain
		// that times out cancels the calls still running through it, their
		// connections open for their answers, at no cost to a call.
		BaseContext: func(net.Listener) context.Context { return s.svc.Context() },
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

// Drain drains the service (service.Service.Drain: new calls and /readyz
// answer 503 draining, calls in flight finish or are cut), then shuts the
// HTTP server down: answers already written are flushed, idle
// connections closed, and what outlasts service.CutGrace is cut off with
// its connection.
func (s *Server) Drain(ctx context.Context) error {
	_ = s.svc.Drain(ctx)
	// Every call has answered; give the last answers (and their hooks) a
	// moment to reach their connections before closing them.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), service.CutGrace)
	defer cancel()
	if err := s.http.Shutdown(sctx); err != nil {
		return s.Close(ctx)
	}
	return nil
}

// Close closes the listener and every connection at once (ctx is not
// waited on); the calls still running are the service's to cancel. Safe
// twice.
func (s *Server) Close(context.Context) error {
	var err error
	s.closeOnce.Do(func() { err = s.http.Close() })
	return err
}

// artifactVersion is the header value of an artifact version.
func (s *Server) artifactVersion(v string) []string {
	if p := s.version.Load(); p != nil && (*p)[0] == v {
		return *p
	}
	h := []string{v}
	s.version.Store(&h)
	return h
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
