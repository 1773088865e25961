package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/kindgi/packd/host"
)

// /v1/invoke: the concurrency cap, the body (bounded in size and time),
// the dispatch and its event.

var digits = regexp.MustCompile(`^[0-9]+$`)

// timeoutFrom reads kindgi-timeout-ms: 0 (none named: host decides the
// call's limit) when it is missing or not a positive integer.
func timeoutFrom(h string) time.Duration {
	if !digits.MatchString(h) {
		return 0
	}
	ms, err := strconv.ParseInt(h, 10, 64)
	if err != nil || ms <= 0 {
		return 0
	}
	// bounded here only so that it cannot overflow a Duration
	return time.Duration(min(ms, host.MaxTimeout.Milliseconds()+1)) * time.Millisecond
}

func (s *Server) invoke(c echo.Context) error {
	// The span of the call (Config.Tracing) ends once the answer is
	// written; egress spans are its children.
	if t := s.cfg.Tracing; t != nil {
		ctx, span := t.startCall(c.Request())
		c.SetRequest(c.Request().WithContext(ctx))
		defer func() { endCall(span, c.Response().Status) }()
	}
	// The call runs, and its hooks are told, on the pack served when it
	// came in, whatever Replace does meanwhile.
	g := s.acquire()
	defer g.release()
	if answered, err := s.unavailable(c, g); answered {
		return err
	}
	// The checks keep the protocol's order (the cap before the content
	// type and the body), but the slot is taken only once the body is in.
	if len(s.sem) == cap(s.sem) {
		return s.overloaded(c)
	}
	req := c.Request()
	if !isJSON(req.Header.Get(echo.HeaderContentType)) {
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
	// The slot is for the work: it is free again once the answer is built,
	// before the answer is written to a caller that may read it slowly, or
	// never (release, below).
	m := s.cfg.Metrics
	if m != nil {
		m.inFlight.Inc()
	}
	held := true
	release := func() {
		if held {
			held = false
			<-s.sem
			if m != nil {
				m.inFlight.Dec()
			}
		}
	}
	defer release()
	admitted := time.Now()

	ctx := req.Context()
	out := g.pack.Dispatch(ctx, host.Request{Body: body, Timeout: timeoutFrom(req.Header.Get(headerTimeout)),
		TenantPin: s.cfg.TenantID, // the body's half of the pin; the header's is checked above
		Admit:     s.admit})
	release()
	if rr := s.cfg.ReplayRecords; rr != nil && (out.Record != nil || out.RecordSkipped != "") {
		defer rr.Keep(out.Record, out.RecordSkipped, g.artifactVersion[0]) // once the answer is written
	}
	elapsed := time.Since(admitted)
	e := Event{
		Time: admitted, Parsed: out.Parsed, Call: out.Call, Usage: out.Usage,
		Outcome: "ok", Status: http.StatusOK, Duration: elapsed,
		TraceID: traceIDFrom(req.Header.Get(headerTraceparent)), SpanID: newSpanID(),
		ArtifactVersion: g.artifactVersion[0],
	}
	if out.Code != "" {
		e.Outcome = string(out.Code)
	}
	// With tracing, the records name the call's span (and its trace, one
	// the call began when the caller sent none).
	span := trace.SpanFromContext(ctx)
	if sc := span.SpanContext(); sc.IsValid() {
		e.TraceID, e.SpanID = sc.TraceID().String(), sc.SpanID().String()
	}
	if out.Parsed && span.IsRecording() {
		defer func() { // once the outcome is final (a refusal's code)
			describeCall(span, e, e.Target == host.TargetTool && g.pack.HasTool(e.ID) || e.Target == host.TargetCheck && g.pack.HasCheck(e.ID))
		}()
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
			s.cfg.Log.Line("error", "The gate failed; the call was refused", Field{"event", "gate-failed"},
				Field{"kind", "gate-failed"}, Field{"error", fmt.Sprint(err)})
		}
		e.Status = rf.status
		message := r.Reason
		if r.Code == host.RefusalOverloaded || r.Code == host.RefusalTenantShare {
			message = "" // the table's: {"error":"overloaded"}
		}
		if r.Code == host.RefusalTenantShare {
			pause(req.Context(), s.cfg.TenantSharePause)
		}
		return s.refuse(c, rf, message)
	}
	h := c.Response().Header()
	h[headerDuration] = []string{strconv.FormatInt(elapsed.Milliseconds(), 10)}
	h[headerArtifactVersion] = g.artifactVersion
	// A caller that does not read its answer holds a connection, not a
	// slot, and not for ever.
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Now().Add(writeTimeout(len(out.Response))))
	return send(c, http.StatusOK, out.Response)
}

// isJSON says whether a Content-Type is application/json, with any
// parameters (charset=utf-8): its media type, not a substring of it
// (text/plain; note=application/json is not, nor application/json-seq).
func isJSON(contentType string) bool {
	if contentType == "application/json" { // what callers send: no parsing
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return (err == nil || errors.Is(err, mime.ErrInvalidMediaParameter)) && mt == "application/json"
}

// pause waits d, or until ctx is done: a call refused for its tenant's
// share is answered after Config.TenantSharePause, its slot already free,
// so that a tenant retrying its refusals at once cannot turn them into load
// that slows the other tenants' calls.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// writeTimeout is how long an answer of n bytes may take to be written:
// 10 s, and a second more for every 64 KiB (a reader slower than that
// is cut off).
func writeTimeout(n int) time.Duration {
	return 10*time.Second + time.Duration(n>>16)*time.Second
}

func (s *Server) overloaded(c echo.Context) error {
	if s.draining.Load() {
		return s.refuse(c, refuseDraining, "")
	}
	return s.refuse(c, refuseOverloaded, "")
}

// presizeBody is the largest declared body length read into a buffer
// allocated before it arrives.
const presizeBody = 64 << 10

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
	var body []byte
	var err error
	if req.ContentLength >= 0 && req.ContentLength <= presizeBody {
		// One buffer (net/http ends the body at its length); a longer
		// declared length is not allocated before its bytes arrive.
		body = make([]byte, req.ContentLength)
		_, err = io.ReadFull(req.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(req.Body, limit+1))
	}
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
