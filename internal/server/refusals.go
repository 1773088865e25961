package server

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kindgi/packd/internal/service"
)

// refusal is how the HTTP face answers a request it does not serve: the
// status, the body's error and code, and whether to say Retry-After.
// Every refusal is in the table below, by its code (the reason counted in
// packd_refusals_total); adding one touches only it.
type refusal struct {
	status     int
	message    string // the body's "error" (a gate's refusal says its own)
	code       bool   // the body says the code
	retryAfter bool
}

// The HTTP face's own refusal codes, beside the service's.
const (
	codeBadToken    = "bad-token"
	codeContentType = "content-type"
	codeTooLarge    = "body-too-large"
	codeTooSlow     = "body-too-slow"
	// A body that cannot be read (the client went away, a malformed chunk).
	codeUnreadable = "body-unreadable"
)

var refusals = map[string]refusal{
	codeBadToken:               {status: http.StatusUnauthorized, message: "Bad pack token"},
	codeContentType:            {status: http.StatusUnsupportedMediaType, message: "Content-Type must be application/json"},
	codeTooLarge:               {status: http.StatusRequestEntityTooLarge, message: "Request body too large"},
	codeTooSlow:                {status: http.StatusRequestTimeout, message: "Request body too slow"},
	codeUnreadable:             {status: http.StatusBadRequest, message: "Cannot read the request body"},
	service.CodeTenantMismatch: {status: http.StatusMisdirectedRequest, message: "This pack service is pinned to another tenant", code: true},
	service.CodeGateDenied:     {status: http.StatusForbidden, code: true},
	service.CodeGateFailed:     {status: http.StatusServiceUnavailable, code: true, retryAfter: true},
	service.CodeDraining:       {status: http.StatusServiceUnavailable, message: "draining", retryAfter: true},
	service.CodeMissingEnv:     {status: http.StatusServiceUnavailable, message: "missing env", retryAfter: true},
	service.CodeOverloaded:     {status: http.StatusServiceUnavailable, message: "overloaded", retryAfter: true},
	// The call's tenant holds its share of the cap while others call; its
	// answer is the overloaded one.
	service.CodeTenantShare: {status: http.StatusServiceUnavailable, message: "overloaded", retryAfter: true},
	// The call's tenant has spent its budget over time: the overloaded
	// answer, with the wait its budget says.
	service.CodeTenantBudget: {status: http.StatusServiceUnavailable, message: "overloaded", retryAfter: true},
}

// noTenant is the message of a tenant mismatch that named no tenant.
const noTenant = "The kindgi-tenant-id header is required by this pack service"

// httpFace is the HTTP face as the service sees it: the status of each
// refusal (a code the table does not know is a 500, which the service's
// codes never are).
type httpFace struct{}

func (httpFace) Name() string { return "http" }

func (httpFace) Status(code string) int {
	if code == "" {
		return http.StatusOK
	}
	if r, ok := refusals[code]; ok {
		return r.status
	}
	return http.StatusInternalServerError
}

// refuse answers a refusal, with its message or the table's, its code and
// missing env names in the body, and Retry-After when the table says so.
// It counts nothing: the service counts its refusals, and faceRefuse the
// face's.
func (s *Server) refuse(c echo.Context, r service.Refusal) error {
	rf, ok := refusals[r.Code]
	if !ok {
		return sendError(c, http.StatusInternalServerError, "Internal error")
	}
	message := r.Message
	if message == "" {
		message = rf.message
	}
	if r.NoTenant {
		message = noTenant
	}
	var extra []any
	if rf.code {
		extra = append(extra, "code", r.Code)
	}
	if r.Code == service.CodeMissingEnv {
		extra = append(extra, "missingEnv", r.MissingEnv)
	}
	if rf.retryAfter {
		c.Response().Header().Set("Retry-After", strconv.Itoa(r.RetryAfterSeconds()))
	}
	if r.Code == codeBadToken {
		// A 401 names how to authenticate (RFC 9110): the token goes in
		// the kindgi-pack-token header.
		c.Response().Header().Set("WWW-Authenticate", "Kindgi-Pack-Token")
	}
	return sendError(c, rf.status, message, extra...)
}

// faceRefuse answers and counts a refusal of the face's own, made before
// any call.
func (s *Server) faceRefuse(c echo.Context, r service.Refusal) error {
	s.svc.Refused(httpFace{}, r.Code)
	return s.refuse(c, r)
}
