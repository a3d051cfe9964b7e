package sessions

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"
)

// Status is how an execution ended.
type Status string

// Execution statuses.
const (
	StatusOK          Status = "ok"
	StatusError       Status = "error"
	StatusTimeout     Status = "timeout"
	StatusInterrupted Status = "interrupted"
	StatusDied        Status = "died"
	// StatusUnknown: the gateway restarted while the execution ran; it
	// went on in the kernel, but its outcome was not seen.
	StatusUnknown Status = "unknown"
)

// Execution is the result of one execution, as the REST API returns it.
type Execution struct {
	ID             string          `json:"id"`
	Status         Status          `json:"status"`
	ExecutionCount int             `json:"execution_count"`
	Stdout         string          `json:"stdout"`
	Stderr         string          `json:"stderr"`
	Outputs        []Event         `json:"outputs"`
	Result         json.RawMessage `json:"result"` // MIME bundle or null
	Error          *ErrorInfo      `json:"error"`
	Truncated      bool            `json:"truncated"`
	StateLost      bool            `json:"state_lost"`
	Reason         string          `json:"reason,omitempty"`
	DurationMS     int64           `json:"duration_ms"`
	Files          []FileChange    `json:"files"`
	// UserExpressions is the kernel's answer to ExecRequest.UserExpressions
	// (per name: status, and a MIME bundle or the error), as the kernel
	// sent it (bounded: kernel.MaxUserExpressionsBytes).
	UserExpressions json.RawMessage `json:"user_expressions,omitempty"`
}

// Bounds of ExecRequest.UserExpressions.
const (
	MaxUserExpressions         = 32
	maxUserExpressionNameBytes = 256
	maxUserExpressionBytes     = 4 << 10
)

// ErrorInfo is the exception an execution raised.
type ErrorInfo struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Traceback []string `json:"traceback"`
}

// FileChange is a workspace change made by an execution.
type FileChange struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Change string `json:"change"` // created|modified|deleted
}

// ExecRequest asks for one execution.
type ExecRequest struct {
	// ID names the execution in events; a random one is chosen if empty.
	ID   string
	Code string
	// Timeout lowers (or, up to the server maximum, raises) the default.
	Timeout time.Duration
	// AllowStdin lets the code call input(); answers come through Input.
	AllowStdin bool
	// Envs and Cwd apply to this execution only (execenv.go): the
	// environment variables are set (under the session env's policy,
	// sandbox.CheckEnv) and the working directory entered (a workspace
	// path, sandbox.SandboxPath) before the code runs, and what was there
	// before is put back after it, whatever its outcome.
	Envs map[string]string
	Cwd  string
	// UserExpressions names expressions the kernel evaluates after the
	// code (ipykernel: only when the code succeeded; at most
	// MaxUserExpressions, each name
	// and expression bounded); their results come back in
	// Execution.UserExpressions and on the done event.
	UserExpressions map[string]string

	// The options of a Jupyter execute_request (see jupyter.go); zero for
	// /v1 executions. Silent and NoHistory are passed to the kernel.
	Silent    bool
	NoHistory bool
	// StopOnError: if this execution fails, the executions of the same
	// Group queued behind it end "aborted" without running.
	StopOnError bool
	Group       string
	// Parent is the Jupyter request header (JSON, at most MaxParentBytes),
	// handed back on the started event's Exec.
	Parent json.RawMessage
	// Owner is an opaque identity of whoever submitted the execution (the
	// Jupyter face: one channels connection), at most MaxOwnerBytes,
	// handed back on ExecInfo.Owner and never shown to clients. The
	// input() of an execution with an Owner is answered only through
	// InputAs with the same owner; Input refuses it.
	Owner string
}

// maxExecIDBytes bounds a client-chosen execution id.
const maxExecIDBytes = 128

// validate checks r against cfg's bounds and fills in its defaults (a
// random ID, cfg's timeout).
func (r *ExecRequest) validate(cfg *Config) error {
	if r.ID == "" {
		r.ID = newSessionID()
	}
	if len(r.ID) > maxExecIDBytes {
		return invalid("execution id longer than %d bytes", maxExecIDBytes)
	}
	if len(r.Code) > cfg.MaxCodeBytes {
		return invalid("code of %d bytes exceeds %d", len(r.Code), cfg.MaxCodeBytes)
	}
	if r.Timeout < 0 || r.Timeout > cfg.MaxExecTimeout {
		return invalid("timeout must be within 0..%v", cfg.MaxExecTimeout)
	}
	if r.Timeout == 0 {
		r.Timeout = cfg.ExecTimeout
	}
	if len(r.UserExpressions) > MaxUserExpressions {
		return invalid("more than %d user expressions", MaxUserExpressions)
	}
	for name, expr := range r.UserExpressions {
		if name == "" || len(name) > maxUserExpressionNameBytes || len(expr) > maxUserExpressionBytes {
			return invalid("a user expression's name must have 1..%d bytes and its code at most %d", maxUserExpressionNameBytes, maxUserExpressionBytes)
		}
	}
	return r.validateJupyter()
}

// job is one queued execution.
type job struct {
	req         ExecRequest
	result      chan *Execution
	exec        *Execution
	interrupted atomic.Bool // a user interrupt was sent during this job
	codeEnded   atomic.Bool // the kernel replied to the job's code: an interrupt now would hit the restore of its settings
	ran         bool        // the job reached the kernel (worker only)

	// See jupyter.go.
	seq       uint64        // enqueue order (see jupyterState.number)
	info      *ExecInfo     // set when it starts (worker only; read under s.mu)
	began     chan struct{} // closed when the kernel began running it (see kernelBegan)
	beganOnce sync.Once
	beganAt   atomic.Int64 // unix nanoseconds, set before began is closed

	out output // what the kernel sent, against the caps (output.go)
}

// newJob returns a job for req; collect keeps its outputs for an Execute
// caller, charged to budget.
func newJob(req ExecRequest, collect bool, caps outputCaps, budget *Account) *job {
	exec := &Execution{ID: req.ID, Outputs: []Event{}, Files: []FileChange{}}
	return &job{req: req, result: make(chan *Execution, 1), began: make(chan struct{}), exec: exec,
		out: output{caps: caps, budget: budget, collect: collect, exec: exec}}
}

// lost records that the kernel's variables did not survive the job.
func (j *job) lost() { j.exec.StateLost = true }

// deliver hands the reported result to the caller (j.result has room for
// it), whose bytes then leave the output budget.
func (j *job) deliver() {
	j.result <- j.exec
	// The caller owns the result now; its bytes leave the budget.
	j.out.release()
}
