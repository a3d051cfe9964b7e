package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/glassroom/glassroom/api"
)

// Kernels returns the languages the gateway runs (GET /v1/kernels), the
// default (Python) first. Each has a Name to pass as a Language and the
// Aliases the gateway also accepts.
func (c *Client) Kernels(ctx context.Context) ([]Kernel, error) {
	var out struct {
		Kernels []Kernel `json:"kernels"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/kernels"}, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return out.Kernels, nil
}

// ContextOptions are the choices of a new context.
type ContextOptions struct {
	// Language is the context's language (a kernel name or alias).
	// Required.
	Language string
	// Cwd is its kernel's working directory: relative to the workspace
	// (/home/user), or absolute under it; "" is the workspace. The gateway
	// makes it (with its parents) when it does not exist.
	Cwd string
}

// CreateContext starts another kernel in the session's sandbox: a context
// with its own language, working directory and variables, sharing the
// session's files and limits. It is nobody's default: code reaches it by
// its ID (ExecuteOptions.Context). It blocks for the kernel's start.
// ErrBadRequest when the language is not installed, ErrTooManyRequests at
// the gateway's limit of contexts per session.
func (c *Client) CreateContext(ctx context.Context, sessionID string, opts ContextOptions) (*Context, error) {
	var out Context
	body := api.CreateContextRequest{Language: opts.Language, Cwd: opts.Cwd}
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "contexts"), json: body}, &out, http.StatusCreated); err != nil {
		return nil, err
	}
	return &out, nil
}

// Contexts lists the session's contexts, its first (FirstContext) first.
func (c *Client) Contexts(ctx context.Context, sessionID string) ([]Context, error) {
	var out struct {
		Contexts []Context `json:"contexts"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: sessionPath(sessionID, "contexts")}, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return out.Contexts, nil
}

// DeleteContext stops a context's kernel; the session's other contexts
// keep running. The first context cannot be deleted (ErrBadRequest):
// delete the session instead.
func (c *Client) DeleteContext(ctx context.Context, sessionID, contextID string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: sessionPath(sessionID, "contexts", url.PathEscape(contextID))}, nil, http.StatusNoContent)
}

// RestartContext restarts one context's kernel: its variables are lost,
// the other contexts keep theirs.
func (c *Client) RestartContext(ctx context.Context, sessionID, contextID string) error {
	return c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "contexts", url.PathEscape(contextID), "restart")}, nil, http.StatusNoContent)
}
