package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/client"
	"github.com/gorilla/websocket"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// Backend is what the tools need from a gateway; *client.Client
// satisfies it.
type Backend interface {
	CreateSession(ctx context.Context, opts client.CreateOptions) (*client.Session, error)
	DeleteSession(ctx context.Context, id string) error
	Execute(ctx context.Context, sessionID, code string, opts client.ExecuteOptions) (*client.Execution, error)
	Kernels(ctx context.Context) ([]client.Kernel, error)
	Contexts(ctx context.Context, sessionID string) ([]client.Context, error)
	RestartContext(ctx context.Context, sessionID, contextID string) error
	WriteFile(ctx context.Context, sessionID, path string, r io.Reader, size int64) (*client.FileInfo, error)
	ReadFile(ctx context.Context, sessionID, path string) (*client.File, error)
	ListFiles(ctx context.Context, sessionID, dir string) (*client.Listing, error)
	EditFile(ctx context.Context, sessionID, path string, req client.EditRequest) (*client.EditResult, error)
	RunCommand(ctx context.Context, sessionID, cmd string, opts client.CommandOptions) (*client.Command, error)
	StartCommand(ctx context.Context, sessionID, cmd string, opts client.CommandOptions) (*client.CommandHandle, error)
	ListSessions(ctx context.Context) ([]client.Session, error)
	Interrupt(ctx context.Context, sessionID string) error
	InterruptContext(ctx context.Context, sessionID, contextID string) error
	Ports(ctx context.Context, sessionID string) ([]client.Port, error)
	Preview(ctx context.Context, sessionID string, port int, expires time.Duration) (*client.Preview, error)
	CreateSnapshot(ctx context.Context, sessionID, name string) (*client.Snapshot, error)
	ForkSession(ctx context.Context, sessionID string, count int) ([]client.Fork, error)
}

var _ Backend = (*client.Client)(nil)

// Config sizes the tools' output. Zero fields take defaults.
type Config struct {
	// MaxTextChars caps the text of one tool result, in characters
	// (default 20000). Longer output keeps its head and tail with a note
	// "[output truncated: N more characters]".
	MaxTextChars int
	// MaxImages caps the images of one result (default 8).
	MaxImages int
	// MaxImageBytes caps one image, decoded (default 4 MiB).
	MaxImageBytes int
	// MaxTotalImageBytes caps all images of one result, decoded (default 12 MiB).
	MaxTotalImageBytes int
	// MaxUploadBytes caps the decoded content of one upload_file (default 10 MiB).
	MaxUploadBytes int
	// MaxTimeout caps execute_python's and execute_code's timeout_s (default 10 minutes, the
	// gateway's default maximum).
	MaxTimeout time.Duration
	// NewSession are the options of sessions the tools start.
	NewSession client.CreateOptions
	// Version is reported to clients as the server's version (default "dev").
	Version string
	// Network is the operator's network policy, as the gateway is
	// configured (nil: unknown, e.g. a stdio server in front of a remote
	// gateway). Tool descriptions state it.
	Network *NetworkPolicy
	// MaxResources caps resources/list: the workspace files listed over
	// all of the caller's sessions (default 200).
	MaxResources int
	// MaxResourceBytes caps one resources/read (default 4 MiB).
	MaxResourceBytes int
	// SessionTimeout closes an MCP session (over HTTP) that has seen no
	// request for this long (default 30 minutes).
	SessionTimeout time.Duration
	// MaxHTTPSessions caps the MCP sessions over HTTP open at once, all
	// tenants together (default 256); MaxHTTPSessionsPerTenant caps one
	// tenant's share of them (default 64, a quarter). An initialize past
	// either is answered 429 and opens nothing.
	MaxHTTPSessions          int
	MaxHTTPSessionsPerTenant int
}

// NetworkPolicy is what the gateway's operator lets sessions reach: Allow
// is the ceiling of the allowlist a session may ask for (host patterns such
// as "pypi.org" or "*.pythonhosted.org"); empty: no session has a network.
type NetworkPolicy struct {
	Allow []string
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxTextChars, 20000)
	def(&c.MaxImages, 8)
	def(&c.MaxImageBytes, 4<<20)
	def(&c.MaxTotalImageBytes, 12<<20)
	def(&c.MaxUploadBytes, 10<<20)
	def(&c.MaxResources, 200)
	def(&c.MaxResourceBytes, 4<<20)
	def(&c.MaxHTTPSessions, 256)
	def(&c.MaxHTTPSessionsPerTenant, min(64, c.MaxHTTPSessions))
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 30 * time.Minute
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = 10 * time.Minute
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxTextChars < 0 || c.MaxImages < 0 || c.MaxImageBytes < 0 || c.MaxTotalImageBytes < 0 || c.MaxUploadBytes < 0 || c.MaxTimeout < 0 ||
		c.MaxResources < 0 || c.MaxResourceBytes < 0 || c.SessionTimeout < 0 ||
		c.MaxHTTPSessions < 0 || c.MaxHTTPSessionsPerTenant < 0 {
		return errors.New("mcp: config: negative limit")
	}
	if c.MaxHTTPSessions != 0 && c.MaxHTTPSessionsPerTenant > c.MaxHTTPSessions {
		return errors.New("mcp: config: MaxHTTPSessionsPerTenant above MaxHTTPSessions")
	}
	if c.MaxTextChars != 0 && c.MaxTextChars < 1000 {
		return errors.New("mcp: config: MaxTextChars must be at least 1000")
	}
	return nil
}

// Server is one MCP server over one backend. Its tools are safe for
// concurrent calls.
type Server struct {
	mcp *sdk.Server
	t   *tools
}

// New builds a server whose tools call b.
func New(b Backend, cfg Config, log zerolog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if b == nil {
		return nil, errors.New("mcp: nil backend")
	}
	return newServer(b, cfg.withDefaults(), log, nil, nil), nil
}

func newServer(b Backend, cfg Config, log zerolog.Logger, cache *sdk.SchemaCache, sessionID func() string) *Server {
	t := &tools{b: b, cfg: cfg, log: log, created: map[string]bool{}}
	s := sdk.NewServer(&sdk.Implementation{Name: "glassroom", Title: "glassroom: sandboxed, stateful Python", Version: cfg.Version},
		&sdk.ServerOptions{Instructions: instructions + networkSentence(cfg.Network), SchemaCache: cache, GetSessionID: sessionID})
	t.register(s)
	return &Server{mcp: s, t: t}
}

// MCP returns the SDK server, e.g. to connect it to another transport.
func (s *Server) MCP() *sdk.Server { return s.mcp }

// Run serves one client over transport until the client disconnects or
// ctx ends.
func (s *Server) Run(ctx context.Context, transport sdk.Transport) error {
	return s.mcp.Run(ctx, transport)
}

// CreatedSessions lists the sessions the tools started and did not close.
func (s *Server) CreatedSessions() []string {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	ids := make([]string, 0, len(s.t.created))
	for id := range s.t.created {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// CloseCreatedSessions deletes every session the tools started (for a
// stdio server whose client went away: nobody else knows their ids).
func (s *Server) CloseCreatedSessions(ctx context.Context) error {
	var errs []error
	for _, id := range s.CreatedSessions() {
		if err := s.t.b.DeleteSession(ctx, id); err != nil && !errors.Is(err, client.ErrNotFound) {
			errs = append(errs, fmt.Errorf("close session %s: %w", id, err))
		}
		s.t.forget(id)
	}
	return errors.Join(errs...)
}

// NewHTTPHandler serves MCP's streamable HTTP transport. Each MCP session
// (from initialize to DELETE, or SessionTimeout without a request) gets
// its own server over the backend backendFor returns for the initialize
// request; tenant names who sent it (e.g. a hash of its key). The session
// is bound to that tenant: its id carries a MAC of the tenant, and a
// request naming the session from another tenant is answered 404, as an
// unknown session. Sessions are stateful so that a client's
// notifications/cancelled reaches the running call and its logging level
// holds for the session. The SDK's DNS-rebinding protection (a loopback
// listener refuses non-loopback Host headers) is on, and cross-origin
// browser requests are refused. backendFor returning an error answers 400.
// Sessions are capped (MaxHTTPSessions, MaxHTTPSessionsPerTenant): an
// initialize past a cap is answered 429 naming the share that is spent.
func NewHTTPHandler(backendFor func(*http.Request) (Backend, error), tenant func(*http.Request) string, cfg Config, log zerolog.Logger) (*HTTPHandler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if backendFor == nil || tenant == nil {
		return nil, errors.New("mcp: nil backendFor or tenant")
	}
	cfg = cfg.withDefaults()
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, fmt.Errorf("mcp: session secret: %w", err)
	}
	cache := sdk.NewSchemaCache()
	hh := &HTTPHandler{servers: map[*sdk.Server]*tracked{}, gates: map[string]*gate{},
		max: cfg.MaxHTTPSessions, maxTenant: cfg.MaxHTTPSessionsPerTenant, idle: cfg.SessionTimeout}
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		b, err := backendFor(r)
		if err != nil || b == nil {
			log.Debug().Err(err).Msg("mcp: no backend for request")
			return nil
		}
		if hh.isClosed() {
			return nil
		}
		who := tenant(r)
		// The SDK asks for a server at every request (to check its
		// protocol version) and again to open a session; a server is
		// tracked only once it is given a session id.
		var srv *sdk.Server
		srv = newServer(b, cfg, log, cache, func() string {
			hh.track(srv, who)
			var n [16]byte
			_, _ = rand.Read(n[:])
			nonce := hex.EncodeToString(n[:])
			return nonce + "." + sessionMAC(secret[:], nonce, who)
		}).mcp
		return srv
	}, &sdk.StreamableHTTPOptions{
		SessionTimeout: cfg.SessionTimeout,
		// Base64 grows an upload by a third; leave room for the envelope.
		MaxRequestBodyBytes: int64(cfg.MaxUploadBytes)/3*4 + 1<<20,
	})
	bound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			nonce, mac, ok := strings.Cut(id, ".")
			if !ok || !hmac.Equal([]byte(mac), []byte(sessionMAC(secret[:], nonce, tenant(r)))) {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
		} else if r.Method == http.MethodPost {
			// A request without a session opens one (initialize).
			hh.serveInitialize(w, r, tenant(r), h)
			return
		}
		h.ServeHTTP(w, r)
	})
	hh.h = http.NewCrossOriginProtection().Handler(bound)
	return hh, nil
}

// HTTPHandler is the MCP HTTP handler. Close ends its MCP sessions.
type HTTPHandler struct {
	h              http.Handler
	max, maxTenant int
	idle           time.Duration // the SessionTimeout, for refusals' messages

	mu      sync.Mutex
	closed  bool
	servers map[*sdk.Server]*tracked // one per MCP session; pruned when their session has ended
	gates   map[string]*gate         // per tenant with an initialize waiting or running
}

// tracked is a server given a session id, and whose it is.
type tracked struct {
	tenant string
	added  time.Time
	seen   bool // it has had a session: once empty, the session has ended
}

// gate lets one initialize of a tenant run at a time, so that its count
// of sessions is exact when it is admitted.
type gate struct {
	turn  chan struct{}
	users int
}

// ErrTooManySessions is the error of an initialize past a cap on MCP
// sessions over HTTP.
var ErrTooManySessions = errors.New("too many MCP sessions")

// pendingSession is how long a server given a session id may stay
// without its session (the SDK connects it within the same request)
// before it is forgotten.
const pendingSession = time.Minute

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// serveInitialize serves a request that opens a session, one per tenant
// at a time (waiting for its turn at most as long as r's context), after
// checking the tenant's and the gateway's caps: a cap that is spent is
// answered 429 naming it, and opens nothing. Initializes of different
// tenants run at once, so the gateway-wide cap may be passed by at most
// the number of tenants initializing together.
func (h *HTTPHandler) serveInitialize(w http.ResponseWriter, r *http.Request, tenant string, next http.Handler) {
	h.mu.Lock()
	g := h.gates[tenant]
	if g == nil {
		g = &gate{turn: make(chan struct{}, 1)}
		h.gates[tenant] = g
	}
	g.users++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		if g.users--; g.users == 0 {
			delete(h.gates, tenant)
		}
		h.mu.Unlock()
	}()
	select {
	case g.turn <- struct{}{}:
		defer func() { <-g.turn }()
	case <-r.Context().Done():
		http.Error(w, "mcp: request cancelled", http.StatusServiceUnavailable)
		return
	}
	if err := h.admit(tenant); err != nil {
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return
	}
	next.ServeHTTP(w, r)
}

// admit reports whether tenant may open one more session, forgetting
// those that have ended. A session counts once initialized: one whose
// initialize failed is closed by the end of its request.
func (h *HTTPHandler) admit(tenant string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errors.New("mcp: shutting down")
	}
	mine, total := 0, 0
	now := time.Now()
	for srv, t := range h.servers {
		empty, open := true, false
		for ss := range srv.Sessions() {
			empty = false
			open = open || ss.InitializeParams() != nil
		}
		switch {
		case !empty:
			t.seen = true
		case t.seen || now.Sub(t.added) > pendingSession:
			delete(h.servers, srv)
		}
		if open {
			total++
			if t.tenant == tenant {
				mine++
			}
		}
	}
	switch {
	case mine >= h.maxTenant:
		return fmt.Errorf("%w: this tenant (API key) has %d MCP sessions open, a tenant's share of the gateway's %d; "+
			"end one (DELETE /mcp with its Mcp-Session-Id) or let one expire (%s without a request)", ErrTooManySessions, mine, h.max, h.idle)
	case total >= h.max:
		return fmt.Errorf("%w: %d MCP sessions are open on this gateway; try again later", ErrTooManySessions, total)
	}
	return nil
}

// track records a server given a session id, for tenant.
func (h *HTTPHandler) track(s *sdk.Server, tenant string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.servers[s] = &tracked{tenant: tenant, added: time.Now()}
	}
}

func (h *HTTPHandler) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// Close closes every MCP session (their streams end, running calls are
// cancelled) and refuses new ones. It does not wait for running calls.
func (h *HTTPHandler) Close() error {
	h.mu.Lock()
	h.closed = true
	servers := h.servers
	h.servers = map[*sdk.Server]*tracked{}
	h.mu.Unlock()
	for s := range servers {
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	}
	return nil
}

// sessionMAC binds an MCP session id (its nonce) to a tenant.
func sessionMAC(secret []byte, nonce, tenant string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(nonce))
	m.Write([]byte{0})
	m.Write([]byte(tenant))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

const instructions = `glassroom runs Python (and R, JavaScript, TypeScript, Bash, Java) in persistent, sandboxed Jupyter kernels ("sessions").
Call execute_python (or execute_code with a language) without session_id to start a session; its id is in the answer.
Pass that session_id to every later call: variables, imports and files persist within a session.
A session has one kernel per language, each with its own variables, all sharing the session's files.
Each session has a private workspace directory (the kernel's working directory) for files:
upload_file puts data there, read_file and list_files read it back, edit_file views and edits text files
(str_replace: old_str must occur exactly once).
numpy, pandas and matplotlib are installed; plt.show() returns the figure as an image.
Idle sessions are deleted after a while; close_session ends one when you are done.
`

// NewGatewayHandler is NewHTTPHandler for a gateway serving /mcp itself:
// each session's tools call that gateway through inProcess (its in-process
// transport; WebSockets through its DialContext method when it has one)
// with the initialize request's bearer key, so they see exactly the
// caller's sessions; a session is bound to that key. The gateway
// authenticates every request first.
func NewGatewayHandler(inProcess http.RoundTripper, cfg Config, log zerolog.Logger) (*HTTPHandler, error) {
	return NewHTTPHandler(func(r *http.Request) (Backend, error) {
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return nil, errors.New("mcp: no bearer key")
		}
		return InProcessClient(inProcess, key)
	}, func(r *http.Request) string {
		sum := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		return hex.EncodeToString(sum[:])
	}, cfg, log)
}

// InProcessClient is a client of a gateway through its in-process
// transport, with key. When inProcess has a DialContext method (the
// gateway's does), WebSockets go through it too, so streamed executions
// (progress, cancellation) work in-process.
func InProcessClient(inProcess http.RoundTripper, key string) (*client.Client, error) {
	cfg := client.Config{BaseURL: "http://glassroom.in-process", APIKey: key, HTTPClient: &http.Client{Transport: inProcess}}
	if d, ok := inProcess.(interface {
		DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	}); ok {
		cfg.Dialer = &websocket.Dialer{NetDialContext: d.DialContext, HandshakeTimeout: 30 * time.Second}
	}
	return client.New(cfg)
}
