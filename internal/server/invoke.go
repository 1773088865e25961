package server

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/kindgi/packd/internal/service"
	"github.com/labstack/echo/v4"
)

// /v1/invoke: the body (bounded in size and time) and the headers a call
// is read from and answered with; the call is the service's.

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
	return time.Duration(min(ms, service.MaxTimeout.Milliseconds()+1)) * time.Millisecond
}

func (s *Server) invoke(c echo.Context) error {
	req := c.Request()
	a := s.svc.Call(req.Context(), service.Request{
		Body:          func() ([]byte, *service.Refusal) { return s.readBody(c) },
		Timeout:       timeoutFrom(req.Header.Get(headerTimeout)),
		ClaimedTenant: req.Header[headerTenant],
		TraceParent:   req.Header.Get(headerTraceparent),
		TraceState:    req.Header.Get(headerTracestate),
		Face:          httpFace{},
	})
	defer a.Done() // once the answer is written
	if r := a.Refusal; r != nil {
		return s.refuse(c, *r)
	}
	h := c.Response().Header()
	h[headerDuration] = []string{strconv.FormatInt(a.Duration.Milliseconds(), 10)}
	h[headerArtifactVersion] = s.artifactVersion(a.ArtifactVersion)
	// A caller that does not read its answer holds a connection, not a
	// slot, and not for ever.
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Now().Add(writeTimeout(len(a.Response))))
	return send(c, http.StatusOK, a.Response)
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

// writeTimeout is how long an answer of n bytes may take to be written:
// 10 s, and a second more for every 64 KiB (a reader slower than that
// is cut off).
func writeTimeout(n int) time.Duration {
	return 10*time.Second + time.Duration(n>>16)*time.Second
}

// presizeBody is the largest declared body length read into a buffer
// allocated before it arrives.
const presizeBody = 64 << 10

// readBody reads an invoke body once the service has checked the call
// (service.Request.Body): JSON, bounded in size (MaxBodyBytes, refused on
// Content-Length alone when it says more) and in time (BodyTimeout). It
// returns the body, or the refusal to answer.
func (s *Server) readBody(c echo.Context) ([]byte, *service.Refusal) {
	req := c.Request()
	if !isJSON(req.Header.Get(echo.HeaderContentType)) {
		return nil, &service.Refusal{Code: codeContentType}
	}
	limit := s.cfg.MaxBodyBytes
	if req.ContentLength > limit {
		s.discardBody(c)
		return nil, &service.Refusal{Code: codeTooLarge}
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
			return nil, &service.Refusal{Code: codeTooSlow}
		}
		return nil, &service.Refusal{Code: codeUnreadable}
	}
	if int64(len(body)) > limit {
		s.discardBody(c)
		return nil, &service.Refusal{Code: codeTooLarge}
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
