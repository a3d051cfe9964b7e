package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/sessions"
	"github.com/labstack/echo/v4"
)

// lookup finds what a request names: its session (for the request's
// tenant), the context it runs in, and its JSON body. Every handler type
// holds one; it holds no state of its own beyond the manager and the
// body bound, and is safe for concurrent use.
type lookup struct {
	mgr          *sessions.Manager
	maxBodyBytes int64
	// previewHost is the PreviewHost of a session (whose previews are
	// private or not); nil without previews.
	previewHost func(id string, private bool) string
}

// info is sess's description as the API shows it.
func (s lookup) info(sess *sessions.Session) sessions.Info {
	return s.annotate(sess.Info())
}

// annotate adds what the gateway knows of a session to in.
func (s lookup) annotate(in sessions.Info) sessions.Info {
	if s.previewHost != nil {
		in.PreviewHost = s.previewHost(in.ID, in.PrivatePreviews)
	}
	return in
}

// decodeJSON reads one JSON object from the body into v: at most
// MaxBodyBytes (413 past it), no unknown fields, nothing after it. An empty
// body leaves v untouched.
func (s lookup) decodeJSON(c echo.Context, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, s.maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return httperr.New(http.StatusRequestEntityTooLarge, "too_large", "request body exceeds %d bytes", s.maxBodyBytes)
		}
		return httperr.New(http.StatusBadRequest, "bad_request", "could not read body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return httperr.New(http.StatusBadRequest, "bad_request", "invalid JSON body: %s", err.Error())
	}
	if dec.More() {
		return httperr.New(http.StatusBadRequest, "bad_request", "invalid JSON body: trailing data")
	}
	return nil
}

// session is the route's session. A hibernated one is woken when its
// lifecycle resumes it on use (the request waits for the wake), else it
// is sessions.ErrHibernated (409) until a resume.
func (s lookup) session(c echo.Context) (*sessions.Session, error) {
	sess, err := s.mgr.Get(tenant.Of(c), c.Param("id"))
	var he *sessions.HibernatedError
	if errors.As(err, &he) && he.AutoResume {
		return sessions.Wake(c.Request().Context(), s.mgr, tenant.Of(c), c.Param("id"))
	}
	return sess, err
}

// sessionRequest is the route's session and, decoded into v by
// decodeJSON, the request's body. The session is looked up first: a
// request for an unknown session fails as such, whatever its body.
func (s lookup) sessionRequest(c echo.Context, v any) (*sessions.Session, error) {
	sess, err := s.session(c)
	if err != nil {
		return nil, err
	}
	if err := s.decodeJSON(c, v); err != nil {
		return nil, err
	}
	return sess, nil
}

// target is the session's context a request runs in (its context and
// language fields; see api.ExecuteRequest).
func (s lookup) target(c echo.Context, sess *sessions.Session, context, language string) (*sessions.Kernel, error) {
	return sess.Contexts().Resolve(c.Request().Context(), context, language)
}
