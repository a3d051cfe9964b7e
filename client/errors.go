package client

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/glassroom/glassroom/api"
)

// Sentinels matched by *APIError with errors.Is, one per class of HTTP
// status the gateway answers with.
var (
	ErrBadRequest      = errors.New("bad request")                // 400
	ErrUnauthorized    = errors.New("missing or invalid API key") // 401
	ErrNotFound        = errors.New("not found")                  // 404
	ErrConflict        = errors.New("conflict")                   // 409
	ErrTooLarge        = errors.New("request too large")          // 413
	ErrTooManyRequests = errors.New("too many requests")          // 429
	ErrUnavailable     = errors.New("service unavailable")        // 503
	ErrWorkspaceFull   = errors.New("workspace full")             // 507
	ErrServer          = errors.New("gateway internal error")     // other 5xx
	ErrClosed          = errors.New("client: connection closed")  // a Conn after Close or a dropped connection
	ErrProtocol        = api.ErrMalformed                         // a response that is not what the API promises
)

// APIError is an error answer of the gateway:
// {"error":{"code":"...","message":"..."}} with its HTTP status.
type APIError struct {
	Status  int    // HTTP status code
	Code    string // machine-readable code, e.g. "not_found", "queue_full"
	Message string // human-readable explanation
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("glassroom: HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("glassroom: %s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

// Is matches the sentinel for the error's status class.
func (e *APIError) Is(target error) bool {
	switch e.Status {
	case http.StatusBadRequest:
		return target == ErrBadRequest
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	case http.StatusNotFound:
		return target == ErrNotFound
	case http.StatusConflict:
		return target == ErrConflict
	case http.StatusRequestEntityTooLarge:
		return target == ErrTooLarge
	case http.StatusTooManyRequests:
		return target == ErrTooManyRequests
	case http.StatusServiceUnavailable:
		return target == ErrUnavailable
	case http.StatusInsufficientStorage:
		return target == ErrWorkspaceFull
	}
	return e.Status >= 500 && target == ErrServer
}
