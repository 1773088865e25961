package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kindgi/packd/host"
	"github.com/kindgi/packd/internal/ojson"
)

// The routes, their middleware, and admission: the token and the header
// half of the tenant pin; /readyz and /v1/info.

// Request and answer headers, written canonically: net/http's Header.Get
// and Header.Set copy a key that is not, on every request.
const (
	headerPackToken       = "Kindgi-Pack-Token"
	headerTenant          = "Kindgi-Tenant-Id"
	headerTimeout         = "Kindgi-Timeout-Ms"
	headerTraceparent     = "Traceparent"
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
		got := sha256.Sum256([]byte(c.Request().Header.Get(headerPackToken)))
		if subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) != 1 {
			return s.refuse(c, refuseBadToken, "")
		}
		if pin := s.cfg.TenantID; pin != "" {
			tenant := c.Request().Header.Get(headerTenant)
			if tenant != pin {
				r := refuseTenantPinned
				if tenant == "" {
					r = refuseTenantMissing
				}
				if c.Request().URL.Path == "/v1/invoke" {
					s.runHooks(Event{Time: time.Now(), Outcome: host.RefusalTenantMismatch,
						Status: r.status, Call: host.Call{Correlation: host.Correlation{TenantID: tenant}},
						TraceID: traceIDFrom(c.Request().Header.Get(headerTraceparent))})
				}
				return s.refuse(c, r, "")
			}
		}
		return h(c)
	}
}

// unavailable answers the first 503 that applies (draining, missing env)
// and says whether it did. A server is never "not ready" otherwise: it is
// built around a pack that has loaded (New), and before that nothing
// listens.
func (s *Server) unavailable(c echo.Context) (bool, error) {
	switch {
	case s.draining.Load():
		return true, s.refuse(c, refuseDraining, "")
	case s.cfg.StrictEnv && len(s.cfg.MissingEnv) > 0:
		return true, s.refuse(c, refuseMissingEnv, "", "missingEnv", s.cfg.MissingEnv)
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
	idx := s.cfg.Pack.Index()
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
		checks = append(checks, g.InvokeID())
	}
	return ojson.Encode(&ojson.Object{
		Keys: []string{"protocol", "packId", "packVersion", "artifactVersion", "indexHash", "tools", "checks", "missingEnv"},
		Vals: []any{2.0, idx.PackID, idx.PackVersion, idx.ArtifactVersion, idx.Hash, tools, checks, s.cfg.MissingEnv},
	})
}

func (s *Server) getInfo(c echo.Context) error { return send(c, http.StatusOK, s.info) }
