package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Streamable HTTP on /mcp: who may call (the token, or a loopback caller
// with loopback Host and Origin), and the bounds on what a caller sends
// (size, time, depth, batch length, id length) and reads (time), before
// the SDK sees a byte of it.

// Bounds on a request's JSON-RPC messages.
const (
	// maxDepth bounds the nesting of a message's JSON (arrays and
	// objects): the decoders below it recurse.
	maxDepth = 128
	// maxBatch bounds the messages of one POST (MCP before 2025-06-18
	// allowed a batch; each message is a handler's goroutine).
	maxBatch = 16
	// maxIDBytes bounds a request id as written (an id is echoed back).
	maxIDBytes = 256
)

// Handler is the face's Streamable HTTP handler, for /mcp.
func (f *Face) Handler() http.Handler { return f.http }

func (f *Face) streamable() http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.server }, &sdk.StreamableHTTPOptions{
		// MCP 2026-07-28 is stateless: every POST is a whole exchange;
		// clients of older revisions are served a session per request.
		Stateless: true,
		// One JSON answer per POST: written once, under a write deadline,
		// and replaceable by a 503 until then (exchange).
		JSONResponse: true,
		// A client that aborts its POST cancels its call.
		PropagateRequestCancellation: true,
		MaxRequestBodyBytes:          f.cfg.MaxBodyBytes,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serveHTTP(h, w, r) })
}

func (f *Face) serveHTTP(next http.Handler, w http.ResponseWriter, r *http.Request) {
	if !f.cfg.NoAuth && !f.authorized(r) {
		f.cfg.Service.Refused(mcpFace{}, codeBadToken)
		v := `Bearer realm="packd"`
		if r.Header.Get("Authorization") != "" || r.Header.Get("Kindgi-Pack-Token") != "" {
			v += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", v)
		httpError(w, http.StatusUnauthorized, "Bad token: send the service token as Authorization: Bearer <token>")
		return
	}
	if why := f.foreign(r); why != "" {
		f.cfg.Service.Refused(mcpFace{}, codeForbidden)
		httpError(w, http.StatusForbidden, why)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "Use POST: this server is stateless (MCP 2026-07-28) and opens no stream of its own")
		return
	}
	body, status, why := f.readBody(w, r)
	if status != 0 {
		httpError(w, status, why)
		return
	}
	if why := checkMessages(body); why != "" {
		writeRPCError(w, http.StatusBadRequest, -32600, why)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	ex := &exchange{w: w}
	r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex))
	next.ServeHTTP(ex, r)
	ex.finish()
}

// authorized says whether a request carries the token: once, as
// "Authorization: Bearer <token>" or as kindgi-pack-token; a header sent
// twice is refused, never read by its first value.
func (f *Face) authorized(r *http.Request) bool {
	var token string
	auth, packToken := r.Header.Values("Authorization"), r.Header.Values("Kindgi-Pack-Token")
	switch {
	case len(auth) == 1 && len(packToken) == 0:
		scheme, t, ok := strings.Cut(auth[0], " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return false
		}
		token = strings.TrimSpace(t)
	case len(packToken) == 1 && len(auth) == 0:
		token = packToken[0]
	default:
		return false
	}
	got := hashToken(token)
	return subtle.ConstantTimeCompare(got[:], f.tokenHash[:]) == 1
}

func hashToken(t string) [32]byte { return sha256.Sum256([]byte(t)) }

// foreign says why a request comes from where this server is not (a DNS
// rebinding, a web page of another origin), or "": without a token (a
// loopback listener), its Host must be a loopback name or address; with or
// without, an Origin it sends must be a loopback one or the Host's own.
func (f *Face) foreign(r *http.Request) string {
	if f.cfg.NoAuth && !loopbackHost(r.Host) {
		return fmt.Sprintf("Host %q is not this server's: a server without a token answers only localhost", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("Origin %q is not an origin", origin)
	}
	if loopbackHost(u.Host) || strings.EqualFold(u.Host, r.Host) {
		return ""
	}
	return fmt.Sprintf("Origin %q is not this server's", origin)
}

// loopbackHost says whether a Host (or an origin's host), with or without
// a port, names this machine's loopback: localhost, 127.0.0.0/8, [::1].
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// readBody reads a request's body, bounded in size (refused on
// Content-Length alone when it says more) and in time; a status and why
// when it cannot.
func (f *Face) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, string) {
	limit := f.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("The body is over %d bytes", limit)
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(f.cfg.BodyTimeout))
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	_ = rc.SetReadDeadline(time.Time{})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		return nil, http.StatusRequestTimeout, "The body came too slowly"
	case err != nil:
		return nil, http.StatusBadRequest, "Cannot read the body"
	case int64(len(body)) > limit:
		w.Header().Set("Connection", "close")
		return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("The body is over %d bytes", limit)
	}
	return body, 0, ""
}

// checkMessages checks a body's JSON-RPC messages against the bounds
// before any decoder that recurses or keeps them reads it: its nesting, the
// number of messages, the length of their ids. "" when within them (a body
// that is not JSON is the SDK's to refuse).
func checkMessages(body []byte) string {
	if d := depth(body); d > maxDepth {
		return fmt.Sprintf("The message nests %d deep, over %d", d, maxDepth)
	}
	trimmed := bytes.TrimSpace(body)
	msgs := []json.RawMessage{trimmed}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &msgs); err != nil {
			return ""
		}
		if len(msgs) > maxBatch {
			return fmt.Sprintf("A batch of %d messages is over %d", len(msgs), maxBatch)
		}
	}
	for _, m := range msgs {
		var idOnly struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(m, &idOnly) == nil && len(idOnly.ID) > maxIDBytes {
			return fmt.Sprintf("A request id of %d bytes is over %d", len(idOnly.ID), maxIDBytes)
		}
	}
	return ""
}

// depth is the deepest nesting of arrays and objects in JSON text,
// outside strings.
func depth(b []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			d++
			deepest = max(deepest, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return deepest
}

// exchange is one POST's answer as the SDK writes it, held until it is
// whole: a call the service refused as one to send again (overloaded,
// draining) turns it into a 503 with Retry-After when it is the POST's
// only message, and the write is bounded in time (a caller that does not
// read its answer holds a connection, not a goroutine, and not for ever).
type exchange struct {
	w      http.ResponseWriter
	mu     sync.Mutex
	status int
	buf    bytes.Buffer
	retry  string // the refusal code of a call to send again; "": none
}

type exchangeKey struct{}

func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

func (ex *exchange) retryLater(code string) {
	ex.mu.Lock()
	ex.retry = code
	ex.mu.Unlock()
}

func (ex *exchange) Header() http.Header { return ex.w.Header() }

func (ex *exchange) WriteHeader(status int) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.status == 0 {
		ex.status = status
	}
}

func (ex *exchange) Write(p []byte) (int, error) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.status == 0 {
		ex.status = http.StatusOK
	}
	return ex.buf.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (ex *exchange) Unwrap() http.ResponseWriter { return ex.w }

// finish writes the answer: the SDK's, or the 503 of a refused call.
func (ex *exchange) finish() {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.retry != "" && ex.status == http.StatusOK && singleAnswer(ex.buf.Bytes()) {
		ex.w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		ex.w.Header().Set("Content-Type", "application/json")
		ex.w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = ex.w.Write(ex.buf.Bytes()) // the JSON-RPC error, as the SDK wrote it
		return
	}
	if ex.status == 0 {
		ex.status = http.StatusOK
	}
	_ = http.NewResponseController(ex.w).SetWriteDeadline(time.Now().Add(writeTimeout(ex.buf.Len())))
	ex.w.WriteHeader(ex.status)
	_, _ = ex.w.Write(ex.buf.Bytes())
}

// singleAnswer says whether an answer is one JSON-RPC message (not a batch).
func singleAnswer(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// writeTimeout is how long an answer of n bytes may take to be written:
// 10 s, and a second more for every 64 KiB.
func writeTimeout(n int) time.Duration {
	return 10*time.Second + time.Duration(n>>16)*time.Second
}

func httpError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"error": message})
	_, _ = w.Write(append(b, '\n'))
}

// writeRPCError answers a request refused before the SDK read it with a
// JSON-RPC error (its id unknown: null).
func writeRPCError(w http.ResponseWriter, status, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": message}})
	_, _ = w.Write(b)
}
