package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// describe answers GET /v1/tools/{id}[?version=V] with the tool's describe
// envelope (service.Service.DescribeTool). No gate, no pack code, no
// audit line.
func (s *Server) describe(c echo.Context) error {
	id := c.Param("id")
	b, ok := s.svc.DescribeTool(id, c.QueryParam("version"))
	if !ok {
		return sendError(c, http.StatusNotFound, "No tool "+id)
	}
	return send(c, http.StatusOK, b)
}
