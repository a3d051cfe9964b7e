package gateway

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPI describes /v1, /mcp and the WebSocket frames (OpenAPI 3.1).
//
//go:embed openapi.json
var openAPI []byte

// routeOpenAPI serves the OpenAPI document at /openapi.json (no key needed).
func (s *Server) routeOpenAPI(e *echo.Echo) {
	e.GET("/openapi.json", func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-cache")
		return c.Blob(http.StatusOK, "application/json", openAPI)
	})
}
