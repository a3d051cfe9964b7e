package api

// The REST request bodies. The gateway decodes them with unknown fields
// refused; a nil pointer is an absent field (the gateway's default).

// CreateSessionRequest is the body of POST /v1/sessions.
type CreateSessionRequest struct {
	// Language is the language of the session's first context (a kernel
	// name such as "r", or an alias such as "js"); "" is Python.
	Language     string            `json:"language,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	IdleTimeoutS *float64          `json:"idle_timeout_s,omitempty"`
	Limits       *Limits           `json:"limits,omitempty"`  // zero fields: the gateway's defaults
	Network      *Network          `json:"network,omitempty"` // nil: no network
}

// UpdateSessionRequest is the body of PATCH /v1/sessions/{id}.
type UpdateSessionRequest struct {
	IdleTimeoutS *float64 `json:"idle_timeout_s,omitempty"`
}

// ExecuteRequest is the body of POST /v1/sessions/{id}/execute. Code is
// required.
// Context names the context to run in; Language, a language whose
// default context to run in (started on first use); neither: the
// session's first context. Both must agree.
type ExecuteRequest struct {
	Code     *string  `json:"code"`
	TimeoutS *float64 `json:"timeout_s,omitempty"`
	ID       string   `json:"id,omitempty"`
	Context  string   `json:"context,omitempty"`
	Language string   `json:"language,omitempty"`
}

// CreateContextRequest is the body of POST /v1/sessions/{id}/contexts.
// Language is required; Cwd is the kernel's working directory (relative
// to /home/user, or absolute under it; "" is /home/user).
type CreateContextRequest struct {
	Language string `json:"language"`
	Cwd      string `json:"cwd,omitempty"`
}

// IntrospectRequest is the body of POST /v1/sessions/{id}/complete and
// /inspect: the code and a cursor position in Unicode code points (both
// required); DetailLevel (0 or 1) is inspection's.
type IntrospectRequest struct {
	Code        *string `json:"code"`
	CursorPos   *int    `json:"cursor_pos"`
	DetailLevel int     `json:"detail_level,omitempty"`
	Context     string  `json:"context,omitempty"`  // as in ExecuteRequest
	Language    string  `json:"language,omitempty"` // as in ExecuteRequest
}

// Ptr returns a pointer to v, for the optional fields of requests.
func Ptr[T any](v T) *T { return &v }

// RunCommandRequest is the body of POST /v1/sessions/{id}/commands: Cmd
// (required, at most 64 KiB) runs as `bash -lc Cmd` in the session's
// sandbox, in Cwd (a workspace path; "" is /home/user) with Envs added to
// the session's environment (the same name policy). TimeoutS: the
// foreground default is the gateway's execution timeout; a background
// command has none unless given. Stdin is written first; a foreground
// command's stdin is then closed, a background one's stays open.
type RunCommandRequest struct {
	Cmd        string            `json:"cmd"`
	Cwd        string            `json:"cwd,omitempty"`
	Envs       map[string]string `json:"envs,omitempty"`
	TimeoutS   *float64          `json:"timeout_s,omitempty"`
	Background bool              `json:"background,omitempty"`
	Stdin      string            `json:"stdin,omitempty"`
}

// CommandStdinRequest is the body of POST
// /v1/sessions/{id}/commands/{pid}/stdin: Data is written to the
// command's stdin, then it is closed if EOF.
type CommandStdinRequest struct {
	Data string `json:"data,omitempty"`
	EOF  bool   `json:"eof,omitempty"`
}
