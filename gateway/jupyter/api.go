package jupyter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/gateway/internal/wsconn"
	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
)

// apiVersion is what GET /api reports: the version of the Jupyter
// Server REST API the routes follow.
const apiVersion = "1.23.0"

// Config configures the Jupyter API. Zero fields take defaults.
type Config struct {
	// MaxBodyBytes bounds the body of POST /api/kernels and of POST and
	// PATCH /api/sessions (default 2 MiB).
	MaxBodyBytes int64
	// PingInterval is how often idle channels WebSockets are pinged
	// (default 30 s).
	PingInterval time.Duration
	// Replicas, when set, answers for the other gateway replicas of a
	// runtime whose sessions several gateways serve (package gateway's):
	// a JupyterLab on any replica reaches every kernel of its tenant.
	Replicas Replicas
}

// Replicas is what the API needs of the other gateway replicas. Its
// methods do nothing for a request another replica forwarded already.
type Replicas interface {
	// Forward is middleware for the routes of one kernel: the request
	// goes to the replica serving the session idOf names, when another
	// one does.
	Forward(idOf func(echo.Context) string) echo.MiddlewareFunc
	// Gather asks every other replica the same GET and returns the bodies
	// of their 200 answers (bounded), naming in missing those that gave
	// none.
	Gather(c echo.Context) (bodies [][]byte, missing []string)
	// Ask sends the request, its body read there, to each other replica
	// in turn and relays the first answer that is not a 404; handled is
	// false when there is none.
	Ask(c echo.Context) (handled bool, err error)
	// ToSession forwards the request (its body already read: body) to the
	// replica serving tenant's session id, when another one does; handled
	// is false otherwise (it may have been adopted here meanwhile).
	ToSession(c echo.Context, id string, body []byte) (handled bool, err error)
}

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 2 << 20
	}
	if c.PingInterval == 0 {
		c.PingInterval = 30 * time.Second
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxBodyBytes < 0 || c.PingInterval < 0 {
		return errors.New("jupyter: config: negative limit")
	}
	return nil
}

// API serves the Jupyter Server kernels API over a session manager. Create
// it with New and Register its routes; it is safe for concurrent use. It
// serves /api/kernels (and the channels WebSocket, conn.go), /api/me and
// /api/status itself; the kernel specs and /api/sessions are its
// kernelSpecHandlers' and sessionHandlers'.
type API struct {
	cfg      Config
	mgr      *sessions.Manager
	keys     *tenant.Keys
	conns    *wsconn.Group
	upgrader websocket.Upgrader // with the v1 subprotocol offered
	resume   *resumeMap         // where clients' channels left off (resume.go)
	body     bodyReader         // bounded by MaxBodyBytes
	replicas replicaForwarding  // cfg.Replicas
	specs    *kernelSpecHandlers
	sessions *sessionHandlers
	started  time.Time // when the API was made: /api/status's started
	log      zerolog.Logger
}

// New builds the API. keys are the gateway's API keys (a key is a tenant
// as on /v1); conns is the gateway's group of live WebSockets, which the
// channels connections join (the gateway's shutdown ends them and waits);
// upgrader is the gateway's, with its origin check.
func New(cfg Config, mgr *sessions.Manager, keys *tenant.Keys, conns *wsconn.Group, upgrader websocket.Upgrader, log zerolog.Logger) (*API, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if mgr == nil || keys == nil || conns == nil {
		return nil, fmt.Errorf("jupyter: new: a session manager, keys and a connection group are required")
	}
	upgrader.Subprotocols = []string{subprotocolV1}
	cfg = cfg.withDefaults()
	body, replicas := bodyReader{max: cfg.MaxBodyBytes}, replicaForwarding{r: cfg.Replicas}
	return &API{cfg: cfg, mgr: mgr, keys: keys, conns: conns, upgrader: upgrader,
		resume: newResumeMap(defaultResumeLimits()), body: body, replicas: replicas,
		specs:    &kernelSpecHandlers{mgr: mgr},
		sessions: &sessionHandlers{mgr: mgr, body: body, replicas: replicas, log: log},
		started:  time.Now(), log: log}, nil
}

// Register adds the Jupyter Server API's routes to e, beside /v1: /api
// (its version, without a key), /api/kernelspecs, /api/kernels,
// /api/sessions, /api/me, /api/status and /kernelspecs/{name}/{file} (the
// kernels' logos). Every other path under /api is a Jupyter-shaped 404.
func (a *API) Register(e *echo.Echo) {
	e.GET("/api", a.version)
	e.GET("/api/", a.version)
	api := e.Group("/api", a.authenticate)
	api.GET("/kernelspecs", a.specs.list)
	api.GET("/kernelspecs/:name", a.specs.get)
	api.GET("/kernels", a.listKernels)
	api.POST("/kernels", a.startKernel)
	// A kernel another replica serves is that replica's to answer for.
	kernel := a.replicas.kernelMiddleware()
	api.GET("/kernels/:id", a.getKernel, kernel...)
	api.DELETE("/kernels/:id", a.deleteKernel, kernel...)
	api.POST("/kernels/:id/interrupt", a.interrupt, kernel...)
	api.POST("/kernels/:id/restart", a.restart, kernel...)
	api.GET("/kernels/:id/channels", a.channels, kernel...)
	api.GET("/sessions", a.sessions.list)
	api.POST("/sessions", a.sessions.create)
	api.GET("/sessions/:id", a.sessions.get)
	api.PATCH("/sessions/:id", a.sessions.patch)
	api.DELETE("/sessions/:id", a.sessions.delete)
	api.GET("/me", a.me)
	api.PATCH("/me", a.patchMe)
	api.GET("/status", a.status)
	api.Any("/*", func(echo.Context) error {
		return httperr.New(http.StatusNotFound, "not_found", "no such Jupyter API route")
	})
	// Kernel spec resources: each kernel's logos (logos.go).
	e.GET("/kernelspecs/:name/:file", a.specs.resource, a.authenticate)
	e.GET("/kernelspecs/:name/*", func(c echo.Context) error {
		return httperr.New(http.StatusNotFound, "not_found", "kernel spec %s has no such resource", clipID(c.Param("name")))
	}, a.authenticate)
}

// IsPath reports whether an error on path (a request's URL path) is
// answered in the Jupyter shape, ErrorBody.
func IsPath(path string) bool {
	return path == "/api" || strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/kernelspecs/")
}

// ErrorBody is the body of a Jupyter API error, as jupyter_server writes
// it.
type ErrorBody struct {
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

// ErrorOf is the Jupyter-shaped body of e.
func ErrorOf(e *httperr.Error) ErrorBody {
	return ErrorBody{Message: e.Message, Reason: http.StatusText(e.Status)}
}

// authenticate accepts "Authorization: token <key>" (jupyter_server's
// GatewayClient.auth_token) and "Bearer <key>", and ?token=<key> on
// WebSocket upgrades and kernel spec resources; a key is a tenant as on /v1.
func (a *API) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		key := ""
		if scheme, k, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok &&
			(strings.EqualFold(scheme, "token") || strings.EqualFold(scheme, "bearer")) {
			key = strings.TrimSpace(k)
		} else if r.Method == http.MethodGet && (websocket.IsWebSocketUpgrade(r) || strings.HasPrefix(r.URL.Path, "/kernelspecs/")) {
			key = c.QueryParam("token")
		}
		t, ok := a.keys.Lookup(key)
		if !ok {
			c.Response().Header().Set("WWW-Authenticate", `token realm="glassroom"`)
			return httperr.New(http.StatusUnauthorized, "unauthorized", "missing or invalid token (Authorization: token <key>)")
		}
		tenant.Set(c, t)
		return next(c)
	}
}

func (a *API) version(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"version": apiVersion})
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
	return kernelModel{ID: kernelID(info.ID), Name: sess.First().Name(), LastActivity: formatDate(sess.LastActivity()),
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

func (a *API) session(c echo.Context) (*sessions.Session, error) {
	sess, err := a.mgr.Get(tenant.Of(c), sessionIDOf(c.Param("id")))
	if errors.Is(err, sessions.ErrNotFound) {
		return nil, httperr.New(http.StatusNotFound, "not_found", "kernel %s not found (deleted, culled or never started)", c.Param("id"))
	}
	return sess, err
}

func (a *API) listKernels(c echo.Context) error {
	infos := a.mgr.List(tenant.Of(c))
	out := make([]json.RawMessage, 0, len(infos))
	for _, info := range infos {
		if sess, err := a.mgr.Get(tenant.Of(c), info.ID); err == nil {
			b, err := json.Marshal(kernelModelOf(sess))
			if err != nil {
				return err
			}
			out = append(out, b)
		}
	}
	return c.JSON(http.StatusOK, a.replicas.gather(c, out))
}

// startKernelRequest is the body of POST /api/kernels: Name is the kernel
// spec's (or an alias GET /v1/kernels lists; "" is Python), the session's
// first kernel. Other members (path, ...) are accepted and ignored.
type startKernelRequest struct {
	Name string                     `json:"name"`
	Env  map[string]json.RawMessage `json:"env"`
}

// bodyReader reads request bodies, at most max bytes of one (a 413 past
// them). Safe for concurrent use.
type bodyReader struct {
	max int64
}

// read reads c's request body.
func (r bodyReader) read(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, r.max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, httperr.New(http.StatusRequestEntityTooLarge, "too_large", "request body exceeds %d bytes", r.max)
		}
		return nil, httperr.New(http.StatusBadRequest, "bad_request", "could not read body")
	}
	return body, nil
}

func (a *API) startKernel(c echo.Context) error {
	body, err := a.body.read(c)
	if err != nil {
		return err
	}
	var req startKernelRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return httperr.New(http.StatusBadRequest, "bad_request", "invalid JSON body: %s", err.Error())
		}
	}
	// An unknown or uninstalled name is a 400 that says which are installed.
	kernel, err := a.mgr.ResolveKernel(req.Name)
	if err != nil {
		return err
	}
	sess, err := a.mgr.Create(c.Request().Context(), tenant.Of(c), sessions.CreateOptions{Kernel: kernel, Env: kernelEnv(req.Env)})
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

func (a *API) getKernel(c echo.Context) error {
	sess, err := a.session(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, kernelModelOf(sess))
}

// interrupt answers as /v1 does: 204 once the interrupt is sent.
func (a *API) interrupt(c echo.Context) error {
	sess, err := a.session(c)
	if err != nil {
		return err
	}
	if err := sess.First().Interrupt(c.Request().Context()); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (a *API) deleteKernel(c echo.Context) error {
	if _, err := a.session(c); err != nil {
		return err
	}
	if err := a.mgr.Delete(c.Request().Context(), tenant.Of(c), sessionIDOf(c.Param("id"))); err != nil {
		if errors.Is(err, sessions.ErrNotFound) {
			return httperr.New(http.StatusNotFound, "not_found", "kernel %s not found", c.Param("id"))
		}
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (a *API) restart(c echo.Context) error {
	sess, err := a.session(c)
	if err != nil {
		return err
	}
	if err := sess.First().Restart(c.Request().Context()); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, kernelModelOf(sess))
}
