package httperr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/snapshots"
	"github.com/glassroom/glassroom/volumes"
	"github.com/glassroom/glassroom/workspace"
	"github.com/glassroom/glassroom/workspace/fileedit"
	"github.com/labstack/echo/v4"
)

// Error is an error with its HTTP status and public code: what every
// handler of the gateway returns, and the body of every error response of
// the native API ({"error":{"code":"...","message":"..."}}).
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New is an Error with a message made as fmt.Sprintf makes it.
func New(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Of maps any error to its HTTP status and public code. It is the only
// place that knows how package errors become status codes.
func Of(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code := map[int]string{
			http.StatusNotFound: "not_found", http.StatusMethodNotAllowed: "method_not_allowed",
			http.StatusRequestEntityTooLarge: "too_large", http.StatusUnauthorized: "unauthorized",
			http.StatusBadRequest: "bad_request",
		}[he.Code]
		if code == "" {
			code = "error"
		}
		return &Error{Status: he.Code, Code: code, Message: fmt.Sprint(he.Message)}
	}
	switch {
	case errors.Is(err, fileedit.ErrInvalid):
		return New(http.StatusBadRequest, "bad_request", "%s", publicMessage(err))
	case errors.Is(err, fileedit.ErrNoMatch):
		return New(http.StatusConflict, "no_match", "%s", publicMessage(err))
	case errors.Is(err, fileedit.ErrManyMatches):
		return New(http.StatusConflict, "multiple_matches", "%s", publicMessage(err))
	case errors.Is(err, fileedit.ErrChanged):
		return New(http.StatusConflict, "file_changed", "%s", publicMessage(err))
	case errors.Is(err, fileedit.ErrTooLarge):
		return New(http.StatusRequestEntityTooLarge, "too_large", "%s", publicMessage(err))
	case errors.Is(err, fileedit.ErrNotText):
		return New(http.StatusUnprocessableEntity, "not_text", "%s", publicMessage(err))
	case errors.Is(err, workspace.ErrBadPath), errors.Is(err, workspace.ErrSymlink), errors.Is(err, workspace.ErrBadMetadata):
		return New(http.StatusBadRequest, "bad_path", "%s", publicMessage(err))
	case errors.Is(err, sessions.ErrMemorySpent):
		return New(http.StatusServiceUnavailable, "memory_spent", "the gateway's memory for this tenant is spent for now: retry in a moment, or read less at once")
	case errors.Is(err, workspace.ErrPermission):
		return New(http.StatusForbidden, "file_forbidden", "%s", publicMessage(err))
	case errors.Is(err, sessions.ErrSandboxFileTooLarge):
		return New(http.StatusRequestEntityTooLarge, "too_large", "the file is larger than %d MiB, the most a read outside the workspace gives: copy it into the workspace and read it there", sessions.MaxSandboxFileBytes>>20)
	case errors.Is(err, workspace.ErrNotFound):
		return New(http.StatusNotFound, "file_not_found", "%s", publicMessage(err))
	case errors.Is(err, workspace.ErrIsDir), errors.Is(err, workspace.ErrNotDir), errors.Is(err, workspace.ErrExists):
		return New(http.StatusConflict, "file_conflict", "%s", publicMessage(err))
	case errors.Is(err, workspace.ErrClosed):
		return New(http.StatusNotFound, "not_found", "session not found")
	case errors.Is(err, workspace.ErrBusy):
		return New(http.StatusConflict, "file_busy", "%s", publicMessage(err))
	case errors.Is(err, workspace.ErrFull):
		return New(http.StatusInsufficientStorage, "workspace_full", "the workspace is full (its size is limited); delete files and retry")
	case errors.Is(err, sessions.ErrNotFound):
		return New(http.StatusNotFound, "not_found", "session not found")
	case errors.Is(err, sessions.ErrContextNotFound):
		return New(http.StatusNotFound, "context_not_found", "context not found in this session")
	case errors.Is(err, sessions.ErrNoContexts):
		return New(http.StatusBadRequest, "no_contexts", "this gateway's runtime runs one kernel per session: create another session for another language")
	case errors.Is(err, sessions.ErrTooManyContexts):
		return New(http.StatusTooManyRequests, "too_many_contexts", "%s", err.Error())
	case errors.Is(err, sessions.ErrCommandNotFound):
		return New(http.StatusNotFound, "command_not_found", "command not found in this session")
	case errors.Is(err, sessions.ErrTooManyCommands):
		return New(http.StatusTooManyRequests, "too_many_commands", "%s", err.Error())
	case errors.Is(err, sessions.ErrStdinBusy):
		return New(http.StatusConflict, "stdin_busy", "a write to this command's stdin is still waiting for the command to read it; retry once it has")
	case errors.Is(err, sessions.ErrHibernated):
		return New(http.StatusConflict, "session_hibernated", "the session is hibernated (its sandbox freed, its state in a snapshot): POST /v1/sessions/{id}/resume wakes it")
	case errors.Is(err, sessions.ErrNoSnapshots):
		return New(http.StatusNotImplemented, "no_snapshots", "this gateway keeps no snapshots")
	case errors.Is(err, snapshots.ErrNotFound):
		return New(http.StatusNotFound, "snapshot_not_found", "snapshot not found (a snapshot is its tenant's: POST /v1/sessions/{id}/snapshots takes one)")
	case errors.Is(err, snapshots.ErrTooLarge):
		return New(http.StatusRequestEntityTooLarge, "snapshot_too_large", "%s", strings.TrimPrefix(err.Error(), "sessions: snapshot: snapshots: "))
	case errors.Is(err, snapshots.ErrTooMany):
		return New(http.StatusTooManyRequests, "too_many_snapshots", "%s", strings.TrimPrefix(err.Error(), "snapshots: "))
	case errors.As(err, new(*volumes.InvalidError)):
		return New(http.StatusBadRequest, "bad_request", "%s", publicMessage(err))
	case errors.Is(err, volumes.ErrNotFound):
		return New(http.StatusNotFound, "volume_not_found", "volume not found (a volume is its tenant's: POST /v1/volumes makes one)")
	case errors.Is(err, volumes.ErrExists):
		return New(http.StatusConflict, "volume_exists", "a volume of this name exists")
	case errors.Is(err, volumes.ErrInUse):
		return New(http.StatusConflict, "volume_in_use", "%s", strings.TrimPrefix(err.Error(), "volumes: "))
	case errors.Is(err, volumes.ErrNoRoom):
		return New(http.StatusInsufficientStorage, "no_room", "%s", strings.TrimPrefix(err.Error(), "volumes: "))
	case errors.Is(err, volumes.ErrTooMany):
		return New(http.StatusTooManyRequests, "too_many_volumes", "%s", strings.TrimPrefix(err.Error(), "volumes: "))
	case errors.Is(err, volumes.ErrUnsupported), errors.Is(err, sessions.ErrNoVolumes):
		return New(http.StatusNotImplemented, "no_volumes", "this gateway keeps no volumes (they need a root gateway on the local or docker runtime)")
	case errors.Is(err, sessions.ErrNoListener):
		return New(http.StatusBadGateway, "no_listener", "nothing in the sandbox listens on this port")
	case errors.Is(err, sessions.ErrTooManyPortConns):
		return New(http.StatusTooManyRequests, "too_many_connections", "%s", err.Error())
	case errors.Is(err, sessions.ErrCommandEnded):
		return New(http.StatusConflict, "command_ended", "the command has ended")
	case errors.Is(err, sessions.ErrNoCommands):
		return New(http.StatusNotImplemented, "no_commands", "this gateway's runtime cannot run commands in a session's sandbox (the kubernetes runtime has none; use the local or docker runtime)")
	case errors.Is(err, sessions.ErrBadComm):
		return New(http.StatusBadRequest, "bad_comm", "%s", publicMessage(err))
	case errors.Is(err, sessions.ErrCommNotOwned):
		return New(http.StatusForbidden, "comm_not_owned", "%s", publicMessage(err))
	case errors.Is(err, sessions.ErrCommLimit):
		return New(http.StatusTooManyRequests, "comm_limit", "%s", publicMessage(err))
	case errors.Is(err, sessions.ErrCommRate):
		return New(http.StatusTooManyRequests, "rate_limited", "%s", publicMessage(err))
	case errors.Is(err, sessions.ErrInvalid), errors.Is(err, sessions.ErrBadSpec):
		return New(http.StatusBadRequest, "bad_request", "%s", publicMessage(err))
	case errors.Is(err, sessions.ErrTooManySessions):
		return New(http.StatusTooManyRequests, "too_many_sessions", "%s", err.Error())
	case errors.Is(err, sessions.ErrTooManyClients):
		return New(http.StatusTooManyRequests, "too_many_clients", "%s", err.Error())
	case errors.Is(err, sessions.ErrQueueFull):
		return New(http.StatusTooManyRequests, "queue_full", "%s", err.Error())
	case errors.Is(err, sessions.ErrNoInputPending):
		return New(http.StatusConflict, "no_input_pending", "%s", err.Error())
	case errors.Is(err, sessions.ErrNoNetwork):
		return New(http.StatusConflict, "no_network", "this session was created without a network: its network cannot be changed (create a session with a network)")
	case errors.Is(err, sessions.ErrPaused):
		return New(http.StatusConflict, "session_paused", "the session is paused: resume it first (POST /v1/sessions/{id}/resume)")
	case errors.Is(err, sessions.ErrNoPause):
		return New(http.StatusNotImplemented, "no_pause", "this gateway's runtime cannot pause a session")
	case errors.Is(err, sessions.ErrKernelDead), errors.Is(err, sessions.ErrKernelGone):
		return New(http.StatusConflict, "kernel_dead", "the kernel is dead; restart the session")
	case errors.Is(err, sessions.ErrSandboxLeft):
		return New(http.StatusServiceUnavailable, "sandbox_left", "the session is closed but its sandbox could not be removed yet; the gateway retries, and the session stays listed (dead) until it is gone")
	case errors.Is(err, sessions.ErrClosed):
		return New(http.StatusServiceUnavailable, "shutting_down", "the session or gateway is shutting down")
	case errors.Is(err, sessions.ErrReplyTooLarge):
		return New(http.StatusBadGateway, "reply_too_large", "the kernel's reply was larger than glassroom relays (256 KiB on control, 2 MiB on shell)")
	case errors.Is(err, sessions.ErrElsewhereUnreachable): // before DeadlineExceeded: it may wrap one
		return New(http.StatusServiceUnavailable, "session_moving", "the gateway replica serving this session cannot be reached now; retry in a few seconds (a replica that died is replaced within its lease)")
	case errors.Is(err, context.DeadlineExceeded):
		return New(http.StatusGatewayTimeout, "kernel_timeout", "the kernel did not answer in time")
	case errors.Is(err, sessions.ErrUnavailable):
		return New(http.StatusServiceUnavailable, "runtime_unavailable", "could not start a kernel now; the gateway log has the cause")
	}
	return New(http.StatusInternalServerError, "internal", "internal error")
}

// publicError is implemented by the packages' typed errors whose text can
// be shown to a client as it is (workspace.PathError, fileedit.Error,
// sessions.InvalidError, sessions.CommError, sandbox.SpecError): no host paths, no OS details, no package prefixes.
type publicError interface {
	error
	Public() string
}

// publicMessage is an error's text for the client.
func publicMessage(err error) string {
	var pe publicError
	if errors.As(err, &pe) {
		return pe.Public()
	}
	var k workspace.Kind
	if errors.As(err, &k) {
		return string(k)
	}
	return "the request failed"
}
