package gateway

import "github.com/labstack/echo/v4"

// routeFiles registers the workspace file API (issue 5).
func (s *Server) routeFiles(g *echo.Group) {}
