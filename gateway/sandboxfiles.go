package gateway

import (
	"bytes"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/workspace"
	"github.com/labstack/echo/v4"
)

// The sandbox's own file system, read-only, by absolute path (?path=):
// GET /v1/sessions/{id}/sandbox-files reads a file (HEAD: whether an
// entry, a directory too, exists), GET /v1/sessions/{id}/sandbox-files/info describes an entry. A
// path in the workspace is the workspace's file (as under /files); any
// other is read by a command in the sandbox, as the sandbox's user sees
// it (sessions.Commands.ReadSandboxFile), at most
// sessions.MaxSandboxFileBytes.

// sandboxFileRequest is a sandbox-files request's session and path.
type sandboxFileRequest struct {
	sess        *sessions.Session
	abs         string // the ?path=, canonical
	rel         string // the workspace path, when inWorkspace
	inWorkspace bool
}

// sandboxFile reads the request's session and its ?path=.
func (f *filesAPI) sandboxFile(c echo.Context) (sandboxFileRequest, error) {
	sess, err := f.session(c)
	if err != nil {
		return sandboxFileRequest{}, err
	}
	raw := c.QueryParam("path")
	if raw == "" {
		return sandboxFileRequest{}, httperr.New(http.StatusBadRequest, "bad_path", "missing ?path= (an absolute path in the sandbox)")
	}
	abs, err := sessions.CleanSandboxPath(raw)
	if err != nil {
		return sandboxFileRequest{}, err
	}
	rel, in := workspace.RelativeToRoot(abs)
	return sandboxFileRequest{sess: sess, abs: abs, rel: rel, inWorkspace: in}, nil
}

func (f *filesAPI) readSandboxFile(c echo.Context) error {
	r, err := f.sandboxFile(c)
	if err != nil {
		return err
	}
	sess, abs, rel, inWorkspace := r.sess, r.abs, r.rel, r.inWorkspace
	if c.Request().Method == http.MethodHead { // whether it exists: a file, a directory or another entry
		switch {
		case inWorkspace && rel != "":
			_, err = sess.Files().Stat(rel)
		case !inWorkspace:
			_, err = sess.Commands().StatSandboxFile(c.Request().Context(), abs)
		}
		if err != nil {
			return err
		}
		return c.NoContent(http.StatusOK)
	}
	if inWorkspace {
		if rel == "" {
			return &workspace.PathError{Kind: workspace.ErrIsDir, Path: abs}
		}
		return f.serveFile(c, sess, rel)
	}
	data, err := sess.Commands().ReadSandboxFile(c.Request().Context(), abs, sessions.MaxSandboxFileBytes)
	if err != nil {
		return err
	}
	name := path.Base(abs)
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" || !inlineTypes[strings.SplitN(ctype, ";", 2)[0]] {
		ctype = "application/octet-stream" // never something the browser runs on the gateway's origin
	}
	h := c.Response().Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(data))
	return nil
}

func (f *filesAPI) statSandboxFile(c echo.Context) error {
	r, err := f.sandboxFile(c)
	if err != nil {
		return err
	}
	sess, abs, rel, inWorkspace := r.sess, r.abs, r.rel, r.inWorkspace
	var e workspace.Entry
	switch {
	case inWorkspace && rel == "":
		e = workspace.Entry{Name: path.Base(workspace.SandboxRoot), Type: "dir", Mode: 0o755}
	case inWorkspace:
		e, err = sess.Files().Stat(rel)
	default:
		e, err = sess.Commands().StatSandboxFile(c.Request().Context(), abs)
	}
	if err != nil {
		return err
	}
	e.Path = abs
	return c.JSON(http.StatusOK, e)
}
