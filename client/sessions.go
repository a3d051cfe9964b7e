package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/glassroom/glassroom/api"
)

// CreateOptions are the choices of a new session; zero fields take the
// gateway's defaults.
type CreateOptions struct {
	// Language is the language of the session's first context: a kernel
	// name from Kernels ("python3", "r", "javascript", "typescript",
	// "bash") or an alias ("python", "js", "ts", ...). "" is Python.
	Language    string
	Env         map[string]string // environment variables of the kernel
	IdleTimeout time.Duration     // the session is deleted after this long without activity
	Limits      Limits
	Network     *Network // nil: no network
	// Template is an operator preset (Templates); "" is "default".
	Template string
	// Metadata is stored with the session and filters ListSessionsPage.
	Metadata map[string]string
	// Lifetime: the session is deleted this long after creation (0: the
	// gateway's maximum).
	Lifetime time.Duration
	// Volumes are the key's volumes to mount (CreateVolume): name → a
	// directory under /home/user.
	Volumes map[string]string
	// PrivatePreviews: the session's preview host carries no grant; a
	// preview needs a link's token or Session.TrafficAccessToken.
	PrivatePreviews bool
	// Lifecycle: what the session does at its timeout (nil: it ends);
	// api.Lifecycle says how a paused one resumes.
	Lifecycle *Lifecycle
	// Snapshot starts the session from a snapshot of the key's
	// (CreateSnapshot); the session's Restore says what came back.
	Snapshot string
}

// CreateSession starts a kernel and returns its session. It blocks until
// the kernel answers (about a second; longer under gVisor).
func (c *Client) CreateSession(ctx context.Context, opts CreateOptions) (*Session, error) {
	body := api.CreateSessionRequest{Language: opts.Language, Env: opts.Env, Network: opts.Network, Template: opts.Template, Metadata: opts.Metadata, Volumes: opts.Volumes, PrivatePreviews: opts.PrivatePreviews, Lifecycle: opts.Lifecycle,
		Snapshot: opts.Snapshot}
	if opts.Lifetime != 0 {
		body.LifetimeS = api.Ptr(opts.Lifetime.Seconds())
	}
	if opts.IdleTimeout != 0 { // a negative one is the gateway's to refuse
		body.IdleTimeoutS = api.Ptr(opts.IdleTimeout.Seconds())
	}
	if opts.Limits != (Limits{}) {
		body.Limits = &opts.Limits
	}
	var s Session
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/sessions", json: body}, &s, http.StatusCreated); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListSessions returns the sessions of the client's key.
func (c *Client) ListSessions(ctx context.Context) ([]Session, error) {
	var out struct {
		Sessions []Session `json:"sessions"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/sessions"}, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return out.Sessions, nil
}

// GetSession returns one session (ErrNotFound when it does not exist for this key).
func (c *Client) GetSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	if err := c.do(ctx, request{method: http.MethodGet, path: sessionPath(id)}, &s, http.StatusOK); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSession stops the kernel and removes the session and its workspace.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: sessionPath(id)}, nil, http.StatusNoContent)
}

// SetIdleTimeout changes how long the session may stay idle before the
// gateway deletes it, and returns the updated session.
func (c *Client) SetIdleTimeout(ctx context.Context, id string, d time.Duration) (*Session, error) {
	if d <= 0 {
		return nil, errors.New("client: SetIdleTimeout: the timeout must be positive")
	}
	var s Session
	body := api.UpdateSessionRequest{IdleTimeoutS: api.Ptr(d.Seconds())}
	if err := c.do(ctx, request{method: http.MethodPatch, path: sessionPath(id), json: body}, &s, http.StatusOK); err != nil {
		return nil, err
	}
	return &s, nil
}

// SetNetwork replaces the session's network rules while it runs (E2B's
// update_network): new connections follow n at once and the open ones it
// refuses are closed. ErrConflict for a session created without a
// network; a rule beyond the gateway's ceiling is refused (400).
func (c *Client) SetNetwork(ctx context.Context, id string, n Network) (*Session, error) {
	var s Session
	body := api.UpdateSessionRequest{Network: &n}
	if err := c.do(ctx, request{method: http.MethodPatch, path: sessionPath(id), json: body}, &s, http.StatusOK); err != nil {
		return nil, err
	}
	return &s, nil
}

// ExecuteOptions tune one execution.
type ExecuteOptions struct {
	// Timeout bounds the execution on the gateway (0: its default). A
	// timed-out execution ends with status "timeout", not an error.
	Timeout time.Duration
	// ID names the execution in events other WebSocket clients see
	// (default: chosen by the gateway).
	ID string
	// Context is the id of the context to run in (from CreateContext or
	// Contexts; FirstContext is the session's first).
	Context string
	// Language runs the code in that language's default context, which
	// the gateway starts on first use (that call waits for the kernel's
	// start). Neither Context nor Language: the session's first context.
	// Both: they must agree.
	Language string
	// Envs and Cwd apply to this execution only: the variables are set
	// (the session env's name policy; a reserved name is ErrBadRequest)
	// and the working directory entered (a workspace path, relative to
	// /home/user or absolute under it; it must exist, else the Execution
	// ends "error") before the code runs, and put back after it, whatever
	// its outcome.
	Envs map[string]string
	Cwd  string
	// UserExpressions are expressions by name that the kernel evaluates
	// after the code (Jupyter's user_expressions: at most 32, a name of
	// 1..256 bytes, an expression of at most 4 KiB, else ErrBadRequest);
	// Execution.DecodeUserExpressions has their answers. The Python kernel
	// evaluates none after code that failed.
	UserExpressions map[string]string
}

// Execute runs code and waits for the whole Execution. Code that raises is
// not an error: the Execution has Status "error" and Error set. input() is
// not available over REST (use Run). Executions of a session run one at a
// time, so Execute also waits for those queued before it.
func (c *Client) Execute(ctx context.Context, sessionID, code string, opts ExecuteOptions) (*Execution, error) {
	var x Execution
	body := api.ExecuteRequest{Code: &code, ID: opts.ID, Context: opts.Context, Language: opts.Language, Envs: opts.Envs, Cwd: opts.Cwd,
		UserExpressions: opts.UserExpressions}
	if opts.Timeout != 0 {
		body.TimeoutS = api.Ptr(opts.Timeout.Seconds())
	}
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "execute"), json: body}, &x, http.StatusOK); err != nil {
		return nil, err
	}
	return &x, nil
}

// Interrupt interrupts the running execution of every context of the
// session that runs one (Python raises KeyboardInterrupt).
func (c *Client) Interrupt(ctx context.Context, sessionID string) error {
	return c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "interrupt")}, nil, http.StatusNoContent)
}

// InterruptContext interrupts the running execution of one context only.
func (c *Client) InterruptContext(ctx context.Context, sessionID, contextID string) error {
	return c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "interrupt"),
		query: url.Values{"context": {contextID}}}, nil, http.StatusNoContent)
}

// Restart restarts the session's first context's kernel: same session id,
// its variables gone, files kept (RestartContext restarts another).
func (c *Client) Restart(ctx context.Context, sessionID string) error {
	return c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "restart")}, nil, http.StatusNoContent)
}

// In names the context a completion or inspection asks, as
// ExecuteOptions' Context and Language do. Without one: the first context.
type In struct {
	Context  string
	Language string
}

// in is the one In of a variadic argument (none: the zero In).
func in(opts []In) In {
	if len(opts) == 0 {
		return In{}
	}
	return opts[0]
}

// Complete asks the kernel for completions of code at cursor (a position
// in Unicode code points); an In picks the context (at most one).
func (c *Client) Complete(ctx context.Context, sessionID, code string, cursor int, where ...In) (*Completion, error) {
	var out Completion
	w := in(where)
	body := api.IntrospectRequest{Code: &code, CursorPos: &cursor, Context: w.Context, Language: w.Language}
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "complete"), json: body}, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return &out, nil
}

// Inspect asks the kernel for help on the name at cursor; detail 0 is the
// signature and docstring, 1 adds the source when available; an In picks
// the context (at most one).
func (c *Client) Inspect(ctx context.Context, sessionID, code string, cursor, detail int, where ...In) (*Inspection, error) {
	var out Inspection
	w := in(where)
	body := api.IntrospectRequest{Code: &code, CursorPos: &cursor, DetailLevel: detail, Context: w.Context, Language: w.Language}
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "inspect"), json: body}, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return &out, nil
}
