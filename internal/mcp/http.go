package mcp

import (
	"bytes"
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
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kindgi/packd/internal/service"
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

func (f *Face) streamable() {
	opts := sdk.StreamableHTTPOptions{
		// One JSON answer per POST: written once, under a write deadline,
		// and replaceable by a 503 until then (exchange).
		JSONResponse: true,
		// A client that aborts its POST cancels its call (MCP 2026-07-28;
		// an older client says notifications/cancelled in its session).
		PropagateRequestCancellation: true,
		MaxRequestBodyBytes:          f.cfg.MaxBodyBytes,
		SessionTimeout:               f.cfg.SessionIdle,
		// DNS rebinding is foreign's to refuse: without a token, any Host
		// but a loopback one; with one, the SDK's own check (a loopback
		// listener answers only loopback Hosts) would refuse every request
		// a reverse proxy on the same machine forwards, which the token
		// already vouches for.
		DisableLocalhostProtection: true,
	}
	stateless := opts
	// MCP 2026-07-28 is stateless: every POST is a whole exchange.
	stateless.Stateless = true
	f.statelessHTTP = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.stateless }, &stateless)
	f.sessionsHTTP = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.sessions }, &opts)
	f.http = http.HandlerFunc(f.serveHTTP)
}

// Headers the face reads.
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
	// headerExchange names a POST's exchange to its calls' handlers: set
	// here on every request (a caller's own is dropped), read back from
	// the request's headers, which the SDK hands every handler of it.
	headerExchange = "Packd-Exchange"
)

func (f *Face) serveHTTP(w http.ResponseWriter, r *http.Request) {
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
	session := r.Header.Get(headerSession)
	switch {
	case r.Method == http.MethodDelete && session != "":
		f.sessionsHTTP.ServeHTTP(w, r) // an older client ends its session
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "Use POST: this server opens no stream of its own")
		return
	}
	body, status, why := f.readBody(w, r)
	if status != 0 {
		httpError(w, status, why)
		return
	}
	if d := depth(body); d > maxDepth {
		writeRPCError(w, http.StatusBadRequest, -32600, fmt.Sprintf("The message nests %d deep, over %d", d, maxDepth))
		return
	}
	if req, t := f.fastCall(r, body); req != nil && !f.noFast {
		f.serveFast(w, r, req, t)
		return
	}
	msgs, why := checkMessages(body)
	if why != "" {
		writeRPCError(w, http.StatusBadRequest, -32600, why)
		return
	}
	next := f.statelessHTTP
	if session != "" || (r.Header.Get(headerProtocol) < "2026-07-28" && msgs.initialize) {
		next = f.sessionsHTTP
		if session == "" && f.openSessions() >= f.cfg.MaxSessions {
			f.cfg.Service.Refused(mcpFace{}, service.CodeOverloaded)
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
			httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("%d sessions are open, as many as this server keeps: retry later, or speak MCP 2026-07-28 (no session)", f.cfg.MaxSessions))
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	ex, id := f.exchanges.open(w, f.writeTimeout)
	defer f.exchanges.close(id)
	r.Header.Set(headerExchange, id)
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
	var body []byte
	var err error
	if r.ContentLength >= 0 && r.ContentLength <= presizeBody {
		// one buffer of the declared length (net/http ends the body there)
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
	}
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

// messages is what the face reads of a body's JSON-RPC messages.
type messages struct {
	// initialize: one of them is an initialize (an older client opening
	// a session).
	initialize bool
}

// presizeBody is the largest declared body length read into a buffer
// allocated before it arrives.
const presizeBody = 64 << 10

// checkMessages checks a body's JSON-RPC messages against the bounds
// before the SDK's decoders read it (its nesting is checked before): the
// number of messages, the length of their ids; why when past one (a body
// that is not JSON is the SDK's to refuse).
func checkMessages(body []byte) (messages, string) {
	var m messages
	trimmed := bytes.TrimSpace(body)
	msgs := []json.RawMessage{trimmed}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &msgs); err != nil {
			return m, ""
		}
		if len(msgs) > maxBatch {
			return m, fmt.Sprintf("A batch of %d messages is over %d", len(msgs), maxBatch)
		}
	}
	for _, raw := range msgs {
		var head struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(raw, &head) != nil {
			continue
		}
		if len(head.ID) > maxIDBytes {
			return m, fmt.Sprintf("A request id of %d bytes is over %d", len(head.ID), maxIDBytes)
		}
		m.initialize = m.initialize || head.Method == "initialize"
	}
	return m, ""
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
	w       http.ResponseWriter
	timeout func(n int) time.Duration // writeTimeout
	mu      sync.Mutex
	status  int
	buf     bytes.Buffer
	retry   string // the refusal code of a call to send again; "": none
	wait    int    // its Retry-After, in seconds
}

// exchanges are the POSTs being answered, by the id headerExchange gives
// their handlers.
type exchanges struct {
	next atomic.Uint64
	m    sync.Map // id → *exchange
}

func (xs *exchanges) open(w http.ResponseWriter, timeout func(int) time.Duration) (*exchange, string) {
	id := strconv.FormatUint(xs.next.Add(1), 36)
	ex := &exchange{w: w, timeout: timeout}
	xs.m.Store(id, ex)
	return ex, id
}

func (xs *exchanges) close(id string) { xs.m.Delete(id) }

// of is the exchange of a request's headers; nil over stdio.
func (xs *exchanges) of(h http.Header) *exchange {
	if ex, ok := xs.m.Load(h.Get(headerExchange)); ok {
		return ex.(*exchange)
	}
	return nil
}

func (ex *exchange) retryLater(code string, seconds int) {
	ex.mu.Lock()
	ex.retry, ex.wait = code, seconds
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
		ex.w.Header().Set("Retry-After", strconv.Itoa(ex.wait))
		ex.w.Header().Set("Content-Type", "application/json")
		ex.w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = ex.w.Write(ex.buf.Bytes()) // the JSON-RPC error, as the SDK wrote it
		return
	}
	if ex.status == 0 {
		ex.status = http.StatusOK
	}
	_ = http.NewResponseController(ex.w).SetWriteDeadline(time.Now().Add(ex.timeout(ex.buf.Len())))
	if ex.buf.Len() > 0 {
		ex.w.Header().Set("Content-Length", strconv.Itoa(ex.buf.Len()))
	}
	ex.w.WriteHeader(ex.status)
	_, _ = ex.w.Write(ex.buf.Bytes())
}

// singleAnswer says whether an answer is one JSON-RPC message (not a batch).
func singleAnswer(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// writeTimeout is how long an answer of n bytes may take to be written:
// Config.WriteTimeout, and a tenth of it more for every 64 KiB (by default
// 10 s and a second a 64 KiB, as /v1/invoke's).
func (f *Face) writeTimeout(n int) time.Duration {
	return f.cfg.WriteTimeout + time.Duration(n>>16)*(f.cfg.WriteTimeout/10)
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
