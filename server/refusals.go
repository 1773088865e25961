package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kindgi/packd/host"
)

// refusal is one way the service answers a request it does not serve: the
// status, the reason counted in packd_refusals_total, the body's error
// and code, and whether to say Retry-After. Every refusal is in the table
// below; adding one touches only it.
type refusal struct {
	status     int
	reason     string // metric label
	message    string // the body's "error" (a gate's refusal says its own)
	code       string // the body's "code", when it has one
	retryAfter bool
}

var (
	refuseBadToken     = refusal{status: http.StatusUnauthorized, reason: "bad-token", message: "Bad pack token"}
	refuseContentType  = refusal{status: http.StatusUnsupportedMediaType, reason: "content-type", message: "Content-Type must be application/json"}
	refuseBodyTooLarge = refusal{status: http.StatusRequestEntityTooLarge, reason: "body-too-large", message: "Request body too large"}
	refuseBodyTooSlow  = refusal{status: http.StatusRequestTimeout, reason: "body-too-slow", message: "Request body too slow"}
	// A body that cannot be read (the client went away, a malformed chunk).
	refuseUnreadableBody = refusal{status: http.StatusBadRequest, reason: "body-unreadable", message: "Cannot read the request body"}
	refuseTenantPinned   = refusal{status: http.StatusMisdirectedRequest, reason: host.RefusalTenantMismatch, message: "This pack service is pinned to another tenant", code: host.RefusalTenantMismatch}
	refuseTenantMissing  = refusal{status: http.StatusMisdirectedRequest, reason: host.RefusalTenantMismatch, message: "The kindgi-tenant-id header is required by this pack service", code: host.RefusalTenantMismatch}
	refuseGateDenied     = refusal{status: http.StatusForbidden, reason: host.RefusalGateDenied, code: host.RefusalGateDenied}
	refuseGateFailed     = refusal{status: http.StatusServiceUnavailable, reason: host.RefusalGateFailed, code: host.RefusalGateFailed, retryAfter: true}
	refuseDraining       = refusal{status: http.StatusServiceUnavailable, reason: "draining", message: "draining", retryAfter: true}
	refuseMissingEnv     = refusal{status: http.StatusServiceUnavailable, reason: "missing-env", message: "missing env", retryAfter: true}
	refuseOverloaded     = refusal{status: http.StatusServiceUnavailable, reason: "overloaded", message: "overloaded", retryAfter: true}
	// refuseTenantShare: the call's tenant holds its share of the cap while
	// others call; its answer is the overloaded one.
	refuseTenantShare = refusal{status: http.StatusServiceUnavailable, reason: "tenant-share", message: "overloaded", retryAfter: true}
)

// hostRefusals are the refusals host.Dispatch can return, by code.
var hostRefusals = map[string]refusal{
	host.RefusalTenantMismatch: refuseTenantPinned,
	host.RefusalGateDenied:     refuseGateDenied,
	host.RefusalGateFailed:     refuseGateFailed,
	host.RefusalOverloaded:     refuseOverloaded,
	host.RefusalTenantShare:    refuseTenantShare,
}

// refuse answers r, with message instead of r's when given and extra
// members in the body; it counts the refusal, except on /readyz (a probe
// being told "not yet" is not a refused request).
func (s *Server) refuse(c echo.Context, r refusal, message string, extra ...any) error {
	if c.Request().URL.Path != "/readyz" {
		s.cfg.Metrics.refused(r.status, r.reason)
	}
	refusedSpan(c.Request().Context(), r.reason)
	if message == "" {
		message = r.message
	}
	if r.code != "" {
		extra = append([]any{"code", r.code}, extra...)
	}
	if r.retryAfter {
		c.Response().Header().Set("Retry-After", "1")
	}
	return sendError(c, r.status, message, extra...)
}
