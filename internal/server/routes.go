package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kindgi/packd/internal/service"
)

// The routes, their middleware, and admission: the token, and the tenant
// header of a request that is not a call; /readyz and /v1/info.

// Request and answer headers, written canonically: net/http's Header.Get
// and Header.Set copy a key that is not, on every request.
const (
	headerPackToken       = "Kindgi-Pack-Token"
	headerTenant          = "Kindgi-Tenant-Id"
	headerTimeout         = "Kindgi-Timeout-Ms"
	headerTraceparent     = "Traceparent"
	headerTracestate      = "Tracestate"
	headerDuration        = "Kindgi-Duration-Ms"
	headerArtifactVersion = "Kindgi-Artifact-Version"
)

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
	routes := []struct {
		path, method string
		h            echo.HandlerFunc
	}{
		{"/v1/invoke", http.MethodPost, s.token(s.invoke)}, // the service checks the call's tenant
		{"/v1/info", http.MethodGet, s.tokenAndTenant(s.getInfo)},
		{"/healthz", http.MethodGet, func(c echo.Context) error { return send(c, http.StatusOK, []byte(`{"status":"ok"}`)) }},
		{"/readyz", http.MethodGet, s.readyz},
		{"/v1/tools/:id", http.MethodGet, s.tokenAndTenant(s.describe)},
	}
	for _, r := range routes {
		e.Any(r.path, s.method(r.method, r.h))
	}
	for _, r := range s.cfg.Routes {
		e.Any(r.Path, echo.WrapHandler(r.Handler))
		for _, m := range []string{"PROPFIND", "REPORT"} { // those Any leaves out
			e.Add(m, r.Path, echo.WrapHandler(r.Handler))
		}
	}
	// A method echo does not route (none of the ones Any registers) on a
	// known path is still the wrong method: 405, as for any other, not 404.
	e.Pre(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !routedMethods[c.Request().Method] {
				for _, r := range routes {
					if pathMatches(r.path, c.Request().URL.Path) {
						return sendError(c, http.StatusMethodNotAllowed, "Use "+r.method)
					}
				}
			}
			return next(c)
		}
	})
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

// token checks the pack token. One token: a header sent twice ("right,
// wrong") is refused, never read by its first value.
func (s *Server) token(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		got := sha256.Sum256([]byte(only(c.Request().Header[headerPackToken])))
		if subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) != 1 {
			return s.faceRefuse(c, service.Refusal{Code: codeBadToken})
		}
		return h(c)
	}
}

// tokenAndTenant checks the token, then the tenant header against the pin.
func (s *Server) tokenAndTenant(h echo.HandlerFunc) echo.HandlerFunc {
	return s.token(func(c echo.Context) error {
		if r := s.svc.CheckTenant(c.Request().Header[headerTenant]); r != nil {
			return s.faceRefuse(c, *r)
		}
		return h(c)
	})
}

// readyz answers 503 while the service would refuse a call for its state
// (draining, missing env), uncounted: a probe being told "not yet" is not a
// refused request. A server is never "not ready" otherwise: its service is
// made around a pack that has loaded, and before that nothing listens.
func (s *Server) readyz(c echo.Context) error {
	if r := s.svc.Ready(); r != nil {
		return s.refuse(c, *r)
	}
	return send(c, http.StatusOK, []byte(`{"status":"ready"}`))
}

func (s *Server) getInfo(c echo.Context) error { return send(c, http.StatusOK, s.svc.Info()) }

// only is a header's value when it was sent once, else "" (absent, or sent
// more than once).
func only(values []string) string {
	if len(values) != 1 {
		return ""
	}
	return values[0]
}

// routedMethods are the methods echo's Any routes.
var routedMethods = map[string]bool{
	http.MethodConnect: true, http.MethodDelete: true, http.MethodGet: true, http.MethodHead: true,
	http.MethodOptions: true, http.MethodPatch: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodTrace: true, "PROPFIND": true, "REPORT": true,
}

// pathMatches reports whether path is a route's pattern, whose ":name"
// segment matches one non-empty segment.
func pathMatches(pattern, path string) bool {
	for pattern != "" && path != "" {
		p, prest, _ := strings.Cut(strings.TrimPrefix(pattern, "/"), "/")
		q, qrest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		if q == "" || (!strings.HasPrefix(p, ":") && p != q) {
			return false
		}
		if prest == "" || qrest == "" {
			return prest == "" && qrest == ""
		}
		pattern, path = "/"+prest, "/"+qrest
	}
	return pattern == path
}
