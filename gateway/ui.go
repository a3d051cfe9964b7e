package gateway

import (
	"io/fs"
	"net/http"

	"github.com/labstack/echo/v4"
)

// contentSecurityPolicy forbids inline script and any third-party origin.
// Kernel HTML is shown only in sandboxed iframes without allow-scripts.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"frame-src 'self' blob: data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// routeUI serves the embedded notebook at / with a strict CSP.
func (s *Server) routeUI(e *echo.Echo, assets fs.FS) {
	files := http.FileServer(http.FS(assets))
	h := echo.WrapHandler(files)
	serve := func(c echo.Context) error {
		c.Response().Header().Set("Content-Security-Policy", contentSecurityPolicy)
		c.Response().Header().Set("Cache-Control", "no-cache")
		return h(c)
	}
	e.GET("/", serve)
	e.GET("/*", serve)
}
