package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
)

// The Jupyter face: the Jupyter Server kernels API ("gateway" API) that
// JupyterLab, Notebook, jupyter_server's --gateway-url and nbclient-style
// tools attach to. It is a view over the sessions, not a second path to
// the kernel: a kernel is a glassroom session (listed in /v1/sessions, with
// its files API, sandbox and limits), and a /v1 session is a kernel here.
// Executions go through the session's queue and event log; the channels
// WebSocket (jupyter_ws.go) renders the session's events as Jupyter
// messages.

// jupyterKernelName is the one kernel spec glassroom serves.
const jupyterKernelName = "python3"

// jupyterAPIVersion is what GET /api reports: the version of the Jupyter
// Server REST API the routes follow.
const jupyterAPIVersion = "1.23.0"

// routeJupyter registers the Jupyter Server API beside /v1.
func (s *Server) routeJupyter(e *echo.Echo) {
	e.GET("/api", s.jupyterVersion)
	e.GET("/api/", s.jupyterVersion)
	api := e.Group("/api", s.authenticateJupyter)
	api.GET("/kernelspecs", s.jupyterKernelSpecs)
	api.GET("/kernelspecs/:name", s.jupyterKernelSpec)
	api.GET("/kernels", s.jupyterListKernels)
	api.POST("/kernels", s.jupyterStartKernel)
	api.GET("/kernels/:id", s.jupyterGetKernel)
	api.DELETE("/kernels/:id", s.jupyterDeleteKernel)
	api.POST("/kernels/:id/interrupt", s.interruptVia(s.jupyterSession))
	api.POST("/kernels/:id/restart", s.jupyterRestart)
	api.GET("/kernels/:id/channels", s.jupyterChannels)
	api.Any("/*", func(echo.Context) error {
		return newError(http.StatusNotFound, "not_found", "no such Jupyter API route")
	})
	// Kernel spec resources (logos): glassroom has none.
	e.GET("/kernelspecs/:name/*", func(c echo.Context) error {
		return newError(http.StatusNotFound, "not_found", "kernel spec %s has no resource files", c.Param("name"))
	}, s.authenticateJupyter)
}

// isJupyterPath reports whether an error on path is answered in the
// Jupyter shape.
func isJupyterPath(path string) bool {
	return path == "/api" || strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/kernelspecs/")
}

// jupyterError is the body of a Jupyter API error, as jupyter_server
// writes it.
type jupyterError struct {
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

func newJupyterError(ae *apiError) jupyterError {
	return jupyterError{Message: ae.Message, Reason: http.StatusText(ae.Status)}
}

// authenticateJupyter accepts "Authorization: token <key>" (jupyter_server's
// GatewayClient.auth_token) and "Bearer <key>", and ?token=<key> on
// WebSocket upgrades and kernel spec resources; a key is a tenant as on /v1.
func (s *Server) authenticateJupyter(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		key := ""
		if scheme, k, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok &&
			(strings.EqualFold(scheme, "token") || strings.EqualFold(scheme, "bearer")) {
			key = strings.TrimSpace(k)
		} else if r.Method == http.MethodGet && (websocket.IsWebSocketUpgrade(r) || strings.HasPrefix(r.URL.Path, "/kernelspecs/")) {
			key = c.QueryParam("token")
		}
		t, ok := s.tenantOf(key)
		if !ok {
			c.Response().Header().Set("WWW-Authenticate", `token realm="glassroom"`)
			return newError(http.StatusUnauthorized, "unauthorized", "missing or invalid token (Authorization: token <key>)")
		}
		c.Set(tenantKey, t)
		return next(c)
	}
}

func (s *Server) jupyterVersion(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"version": jupyterAPIVersion})
}

// kernelSpec is a kernel spec model.
type kernelSpec struct {
	Name      string            `json:"name"`
	Spec      kernelSpecFile    `json:"spec"`
	Resources map[string]string `json:"resources"`
}

type kernelSpecFile struct {
	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode"`
	Env           map[string]string `json:"env"`
	Metadata      map[string]any    `json:"metadata"`
}

func (s *Server) kernelSpec() kernelSpec {
	return kernelSpec{Name: jupyterKernelName, Resources: map[string]string{}, Spec: kernelSpecFile{
		Argv:          []string{"python3", "-I", "-m", "ipykernel_launcher", "-f", "{connection_file}"},
		DisplayName:   "Python 3 (glassroom)",
		Language:      "python",
		InterruptMode: "message",
		Env:           map[string]string{},
		Metadata:      map[string]any{"glassroom": map[string]string{"runtime": s.mgr.RuntimeName()}},
	}}
}

func (s *Server) jupyterKernelSpecs(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"default": jupyterKernelName,
		"kernelspecs": map[string]kernelSpec{jupyterKernelName: s.kernelSpec()}})
}

func (s *Server) jupyterKernelSpec(c echo.Context) error {
	if c.Param("name") != jupyterKernelName {
		return newError(http.StatusNotFound, "not_found", "no kernel spec named %q (glassroom serves %q)", c.Param("name"), jupyterKernelName)
	}
	return c.JSON(http.StatusOK, s.kernelSpec())
}

// kernelModel is a kernel as the Jupyter Server API describes it.
type kernelModel struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	LastActivity   string `json:"last_activity"`
	ExecutionState string `json:"execution_state"`
	Connections    int    `json:"connections"`
}

func kernelModelOf(sess *sessions.Session) kernelModel {
	info := sess.Info()
	return kernelModel{ID: kernelID(info.ID), Name: jupyterKernelName, LastActivity: jupyterDate(sess.LastActivity()),
		ExecutionState: string(info.State), Connections: sess.Clients()}
}

var sessionIDShape = regexp.MustCompile(`^[0-9a-f]{32}$`)
var kernelIDShape = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// kernelID presents a session id (32 hex digits) in the UUID shape
// (8-4-4-4-12) jupyter_server's routes match. It is the same id: /api
// accepts both shapes.
func kernelID(sessionID string) string {
	if !sessionIDShape.MatchString(sessionID) {
		return sessionID
	}
	return sessionID[:8] + "-" + sessionID[8:12] + "-" + sessionID[12:16] + "-" + sessionID[16:20] + "-" + sessionID[20:]
}

// sessionIDOf is the session id a kernel id (either shape) names.
func sessionIDOf(kernel string) string {
	if kernelIDShape.MatchString(kernel) {
		return strings.ToLower(strings.ReplaceAll(kernel, "-", ""))
	}
	return kernel
}

func (s *Server) jupyterSession(c echo.Context) (*sessions.Session, error) {
	sess, err := s.mgr.Get(tenant(c), sessionIDOf(c.Param("id")))
	if errors.Is(err, sessions.ErrNotFound) {
		return nil, newError(http.StatusNotFound, "not_found", "kernel %s not found (deleted, culled or never started)", c.Param("id"))
	}
	return sess, err
}

func (s *Server) jupyterListKernels(c echo.Context) error {
	infos := s.mgr.List(tenant(c))
	out := make([]kernelModel, 0, len(infos))
	for _, info := range infos {
		if sess, err := s.mgr.Get(tenant(c), info.ID); err == nil {
			out = append(out, kernelModelOf(sess))
		}
	}
	return c.JSON(http.StatusOK, out)
}

// startKernelRequest is the body of POST /api/kernels. Other members (path,
// ...) are accepted and ignored.
type startKernelRequest struct {
	Name string                     `json:"name"`
	Env  map[string]json.RawMessage `json:"env"`
}

func (s *Server) jupyterStartKernel(c echo.Context) error {
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return newError(http.StatusRequestEntityTooLarge, "too_large", "request body exceeds %d bytes", s.cfg.MaxBodyBytes)
		}
		return newError(http.StatusBadRequest, "bad_request", "could not read body")
	}
	var req startKernelRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return newError(http.StatusBadRequest, "bad_request", "invalid JSON body: %s", err.Error())
		}
	}
	if req.Name != "" && req.Name != jupyterKernelName {
		return newError(http.StatusNotFound, "not_found", "no kernel spec named %q (glassroom serves %q)", req.Name, jupyterKernelName)
	}
	sess, err := s.mgr.Create(c.Request().Context(), tenant(c), sessions.CreateOptions{Env: kernelEnv(req.Env)})
	if err != nil {
		return err
	}
	m := kernelModelOf(sess)
	c.Response().Header().Set("Location", "/api/kernels/"+m.ID)
	return c.JSON(http.StatusCreated, m)
}

// kernelEnv keeps the variables of a start request that the environment
// policy allows (string values, at most sessions.MaxEnvVars, in name
// order). jupyter_server sends its whole KERNEL_* environment
// (KERNEL_USERNAME, KERNEL_LAUNCH_TIMEOUT, KERNEL_WORKING_DIR, ...): what
// the policy refuses is dropped, not an error, and nothing in it steers
// glassroom.
func kernelEnv(in map[string]json.RawMessage) map[string]string {
	names := make([]string, 0, len(in))
	for k := range in {
		names = append(names, k)
	}
	sort.Strings(names)
	out := map[string]string{}
	for _, k := range names {
		var v string
		if json.Unmarshal(in[k], &v) != nil {
			continue
		}
		if len(out) == sessions.MaxEnvVars {
			break
		}
		if sessions.CheckEnv(map[string]string{k: v}) == nil {
			out[k] = v
		}
	}
	return out
}

func (s *Server) jupyterGetKernel(c echo.Context) error {
	sess, err := s.jupyterSession(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, kernelModelOf(sess))
}

func (s *Server) jupyterDeleteKernel(c echo.Context) error {
	if _, err := s.jupyterSession(c); err != nil {
		return err
	}
	if err := s.mgr.Delete(c.Request().Context(), tenant(c), sessionIDOf(c.Param("id"))); err != nil {
		if errors.Is(err, sessions.ErrNotFound) {
			return newError(http.StatusNotFound, "not_found", "kernel %s not found", c.Param("id"))
		}
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) jupyterRestart(c echo.Context) error {
	sess, err := s.jupyterSession(c)
	if err != nil {
		return err
	}
	if err := sess.Restart(c.Request().Context()); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, kernelModelOf(sess))
}
