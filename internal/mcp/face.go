package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

// Defaults of a zero Config.
const (
	DefaultMaxBodyBytes = 10 << 20
	DefaultBodyTimeout  = 30 * time.Second
	// DefaultMaxSessions bounds the sessions of clients of MCP before
	// 2026-07-28 (initialize, Mcp-Session-Id); DefaultSessionIdle is how
	// long one lives without a request.
	DefaultMaxSessions = 256
	DefaultSessionIdle = 10 * time.Minute
)

// Config is an MCP face over a service.
type Config struct {
	// Service runs the calls. Required.
	Service *service.Service
	// Token is the service token a request to /mcp must carry, as
	// "Authorization: Bearer <token>" or kindgi-pack-token. Required unless
	// NoAuth.
	Token string
	// NoAuth serves /mcp without a token. Only for a listener on a loopback
	// address (the caller checks): the Host and Origin of every request must
	// then be loopback ones (DNS rebinding).
	NoAuth bool
	// MaxBodyBytes bounds a request's body (default 10 MiB, as /v1/invoke's);
	// BodyTimeout how long it may take to arrive (default 30 s).
	MaxBodyBytes int64
	BodyTimeout  time.Duration
	// WriteTimeout is how long an answer may take to be written, and a
	// tenth of it more for every 64 KiB of it (default 10 s): a caller that
	// does not read its answer holds a connection, not a goroutine, and not
	// for ever.
	WriteTimeout time.Duration
	// MaxSessions bounds the sessions of older clients open at once
	// (default 256; an initialize past it is a 503), SessionIdle how long
	// one lives without a request (default 10 min).
	MaxSessions int
	SessionIdle time.Duration
	// Version is packd's, said as the server's in MCP's serverInfo.
	Version string
}

// Face is the MCP face of a service: Handler serves Streamable HTTP,
// ServeStdio a client over stdio.
type Face struct {
	cfg Config
	// stateless serves MCP 2026-07-28 (every POST a whole exchange) and
	// any request of an older client outside a session; sessions serves
	// the sessions older clients open with initialize, in which
	// notifications/cancelled reaches the call it names.
	stateless, sessions *sdk.Server
	http                http.Handler
	statelessHTTP       http.Handler
	sessionsHTTP        http.Handler
	tokenHash           [32]byte
	exchanges           exchanges
	serverInfo          []byte // {"name":"packd","version":…}, as MCP says it
	noFast              bool   // tests: the SDK answers every call
	fastServed          atomic.Int64

	mu     sync.Mutex                // held while the servers' tools change
	synced atomic.Pointer[host.Pack] // the pack whose tools the servers list
	listed atomic.Pointer[toolSet]   // its listed tools, by name
}

// toolSet is the tools listed now, by name.
type toolSet map[string]listedTool

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("mcp: bad config")

// New makes the MCP face of a service.
func New(cfg Config) (*Face, error) {
	if cfg.Service == nil {
		return nil, fmt.Errorf("%w: a service is required", ErrConfig)
	}
	if cfg.Token == "" && !cfg.NoAuth {
		return nil, fmt.Errorf("%w: a token is required (or NoAuth, on a loopback listener only)", ErrConfig)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	f := &Face{cfg: cfg, tokenHash: hashToken(cfg.Token)}
	f.serverInfo, _ = json.Marshal(&sdk.Implementation{Name: "packd", Version: cfg.Version})
	f.stateless, f.sessions = f.newServer(), f.newServer()
	f.sync()
	f.streamable()
	return f, nil
}

func (f *Face) newServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "packd", Version: f.cfg.Version}, &sdk.ServerOptions{
		// Tools only: no logging capability (the SDK's default).
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
	})
	// Every request lists the tools of the pack served now (a reload
	// serves another).
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			f.sync()
			return next(ctx, method, req)
		}
	})
	return s
}

// sync lists the tools of the pack the service serves now, once per pack.
func (f *Face) sync() {
	p := f.cfg.Service.Pack()
	if p == f.synced.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p == f.synced.Load() {
		return
	}
	tools := listedTools(p.Index())
	listed := make(map[string]listedTool, len(tools))
	for _, t := range tools {
		listed[t.id] = t
	}
	var gone []string
	for id := range f.listedNow() {
		if _, ok := listed[id]; !ok {
			gone = append(gone, id)
		}
	}
	for _, t := range tools {
		if sdkRefuses(t.tool) != "" { // IndexProblems refused it at load
			delete(listed, t.id)
			gone = append(gone, t.id)
		}
	}
	for _, s := range []*sdk.Server{f.stateless, f.sessions} {
		if len(gone) > 0 {
			s.RemoveTools(gone...)
		}
		for _, t := range tools {
			if _, ok := listed[t.id]; ok {
				s.AddTool(t.tool, f.handler(t.id))
			}
		}
	}
	set := toolSet(listed)
	f.listed.Store(&set)
	f.synced.Store(p)
}

func (f *Face) listedNow() toolSet {
	if l := f.listed.Load(); l != nil {
		return *l
	}
	return nil
}

// tool is the listed tool of that name now.
func (f *Face) tool(name string) (listedTool, bool) {
	t, ok := f.listedNow()[name]
	return t, ok
}

// ServeStdio serves one client over in and out (newline-delimited
// JSON-RPC, MCP's stdio transport) until it closes in or ctx is done.
func (f *Face) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	in, out = stdioPipes(ctx, in, out, int(f.cfg.MaxBodyBytes))
	err := f.sessions.Run(ctx, &sdk.IOTransport{Reader: in, Writer: out})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Close ends the face's sessions. Safe twice.
func (f *Face) Close(ctx context.Context) error {
	for _, srv := range []*sdk.Server{f.stateless, f.sessions} {
		for s := range srv.Sessions() {
			_ = s.Close()
		}
	}
	return nil
}

// openSessions counts the sessions of older clients open now.
func (f *Face) openSessions() int {
	n := 0
	for range f.sessions.Sessions() {
		n++
	}
	return n
}
