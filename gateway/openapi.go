package gateway

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPI describes /v1, /mcp and the WebSocket frames (OpenAPI 3.1).
// Its paths are written by hand; its components.schemas are generated
// from package api's types (with web/types/wire.d.ts and
// sdk/js/src/wire.ts) by the directive below: `make generate`.
//
//go:generate go run ./internal/wiregen/gen
//go:embed openapi.json
var openAPI []byte

// routeOpenAPI serves the OpenAPI document at /openapi.json (no key needed).
func (s *Server) routeOpenAPI(e *echo.Echo) {
	e.GET("/openapi.json", func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-cache")
		return c.Blob(http.StatusOK, "application/json", openAPI)
	})
}

// Route is one registered method and path, in echo's syntax (":id" for a
// parameter, "*" for the rest of the path).
type Route struct{ Method, Path string }

// Routes lists every registered route, for checks that keep openapi.json
// true.
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.echo.Routes() {
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out
}
