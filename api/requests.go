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
	// Template names an operator preset (GET /v1/templates) whose fields
	// fill those left unset; "" is "default".
	Template string `json:"template,omitempty"`
	// Metadata is stored with the session (at most 64 keys of 1..64 bytes,
	// values of at most 512 bytes) and filters GET /v1/sessions.
	Metadata map[string]string `json:"metadata,omitempty"`
	// LifetimeS: the session is deleted this long after creation (at
	// most the gateway's --max-lifetime, its default).
	LifetimeS *float64 `json:"lifetime_s,omitempty"`
	// Volumes are the tenant's volumes to mount (POST /v1/volumes): name →
	// a directory under /home/user (absolute, or relative to it), made if
	// missing. At most 8; the paths must not overlap.
	Volumes map[string]string `json:"volumes,omitempty"`
	// PrivatePreviews makes the session's previews private (E2B's
	// network allow_public_traffic=False): its preview host carries no
	// grant, and a preview needs a link's token or the session's traffic
	// access token (Session.TrafficAccessToken) in a header.
	PrivatePreviews bool `json:"private_previews,omitempty"`
	// Lifecycle says what the session does when its lifetime or idle
	// timeout ends (E2B's lifecycle): end it (the default), or pause it.
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
	// Snapshot starts the session from a snapshot of the tenant's (POST
	// /v1/sessions/{id}/snapshots): its workspace and its contexts'
	// variables are restored before the answer, which says what came
	// back (Session.Restore). Language defaults to the snapshot's.
	Snapshot string `json:"snapshot,omitempty"`
}

// CreateSnapshotRequest is the optional body of POST
// /v1/sessions/{id}/snapshots: Name (1 to 128 of A-Z a-z 0-9 . _ -)
// labels the snapshot, and GET /v1/snapshots?name= finds it; names need
// not be unique.
type CreateSnapshotRequest struct {
	Name string `json:"name,omitempty"`
}

// ForkRequest is the body of POST /v1/sessions/{id}/fork: Count new
// sessions (1 when absent) start from a capture of the session.
type ForkRequest struct {
	Count *int `json:"count,omitempty"`
}

// Lifecycle is what a session does at its timeout. OnTimeout "kill" (or
// empty) ends it; "pause" freezes its whole sandbox instead, memory and
// variables kept, until it is resumed (POST .../resume, or with
// AutoResume its next execution, command or preview connection), when
// its lifetime starts again. A paused session still ends at the
// gateway's maximum lifetime after its creation.
//
// KeepMemory false (with OnTimeout "pause") hibernates the session
// instead (E2B's keep_memory=False): it is snapshotted, its sandbox freed,
// and it keeps its id; its next use wakes it from the snapshot (with
// AutoResume), else uses answer 409 session_hibernated until a resume.
type Lifecycle struct {
	OnTimeout  string `json:"on_timeout,omitempty"`
	AutoResume bool   `json:"auto_resume,omitempty"`
	KeepMemory *bool  `json:"keep_memory,omitempty"`
}

// PauseRequest is the optional body of POST /v1/sessions/{id}/pause:
// KeepMemory false hibernates the session (Lifecycle) instead of
// freezing it.
type PauseRequest struct {
	KeepMemory *bool `json:"keep_memory,omitempty"`
}

// CreateVolumeRequest is the body of POST /v1/volumes: Name is 1 to 63
// lower-case letters, digits, - and _; SizeMB is its quota (default the
// gateway's, usually 1024).
type CreateVolumeRequest struct {
	Name   string `json:"name"`
	SizeMB int    `json:"size_mb,omitempty"`
}

// UpdateSessionRequest is the body of PATCH /v1/sessions/{id}.
type UpdateSessionRequest struct {
	IdleTimeoutS *float64 `json:"idle_timeout_s,omitempty"`
	// LifetimeS: the session now ends this long from now (at most the
	// gateway's --max-lifetime); 0 is now (E2B's set_timeout(0)): it
	// ends, or pauses when its Lifecycle says so.
	LifetimeS *float64 `json:"lifetime_s,omitempty"`
	// Network replaces the session's network rules while it runs (E2B's
	// update_network): checked as at creation; new connections follow
	// it at once and the open ones it refuses are closed. Only a session
	// created with a network has one to change (409 no_network).
	Network *Network `json:"network,omitempty"`
}

// MoveFileRequest is the body of POST /v1/sessions/{id}/files-move.
type MoveFileRequest struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// FileURLRequest is the body of POST /v1/sessions/{id}/files-url: a
// signed URL that grants Operation ("read": GET and HEAD; "write": PUT
// of the body, or POST of a multipart form's "file" part) on the one
// file Path, without the API key, for ExpiresS seconds (default 3600; at
// most a day; zero or less: already expired).
type FileURLRequest struct {
	Path      string   `json:"path"`
	Operation string   `json:"operation"`
	ExpiresS  *float64 `json:"expires_s,omitempty"`
}

// PreviewRequest is the body of POST /v1/sessions/{id}/previews: a URL
// of the preview of Port (a server in the sandbox, 1..65535) that a
// browser opens without the API key, for ExpiresS seconds (default 3600;
// at most a day).
type PreviewRequest struct {
	Port     int      `json:"port"`
	ExpiresS *float64 `json:"expires_s,omitempty"`
}

// ExecuteRequest is the body of POST /v1/sessions/{id}/execute. Code is
// required.
// Context names the context to run in; Language, a language whose
// default context to run in (started on first use); neither: the
// session's first context. Both must agree.
// Envs and Cwd apply to this execution only: the variables are set (the
// session env's name policy) and the working directory entered (a path in
// the workspace, relative to /home/user or absolute under it; it must
// exist) before the code runs, and put back as they were after it, even
// when it fails, is interrupted or times out.
type ExecuteRequest struct {
	Code     *string           `json:"code"`
	TimeoutS *float64          `json:"timeout_s,omitempty"`
	ID       string            `json:"id,omitempty"`
	Context  string            `json:"context,omitempty"`
	Language string            `json:"language,omitempty"`
	Envs     map[string]string `json:"envs,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	// UserExpressions names expressions the kernel evaluates after the
	// code (ipykernel: only when the code succeeded);
	// Execution.UserExpressions has their results.
	UserExpressions map[string]string `json:"user_expressions,omitempty"`
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
	// Login runs the command in a login shell (bash -lc), which reads
	// /etc/profile and the workspace's ~/.bash_profile or ~/.profile;
	// by default no start-up file runs.
	Login bool `json:"login,omitempty"`
	// PTY runs the command on a pseudo-terminal of this size (E2B's
	// pty): its output is stdout only, its stdin the terminal's keys
	// (\x03 is Ctrl-C), .../resize changes its size. With PTY, cmd may
	// be empty: an interactive bash.
	PTY *TerminalSize `json:"pty,omitempty"`
}

// TerminalSize is a pseudo-terminal's size (each 1..1000; 0: 80 × 24),
// and the body of POST /v1/sessions/{id}/commands/{pid}/resize.
type TerminalSize struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// CommandStdinRequest is the body of POST
// /v1/sessions/{id}/commands/{pid}/stdin: Data is written to the
// command's stdin, then it is closed if EOF.
type CommandStdinRequest struct {
	Data string `json:"data,omitempty"`
	EOF  bool   `json:"eof,omitempty"`
}
