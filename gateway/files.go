package gateway

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/glassroom/glassroom/workspace"
	"github.com/labstack/echo/v4"
)

// routeFiles registers the workspace file API. File calls do not wait for
// the execution queue, so they work while code runs.
func (s *Server) routeFiles(g *echo.Group) {
	g.GET("/sessions/:id/files", s.listFiles)
	g.POST("/sessions/:id/files", s.uploadMultipart)
	g.GET("/sessions/:id/files/*", s.downloadFile)
	g.HEAD("/sessions/:id/files/*", s.downloadFile)
	g.PUT("/sessions/:id/files/*", s.uploadFile)
	g.DELETE("/sessions/:id/files/*", s.deleteFile)
}

// filePath extracts the workspace path after /files/ from the escaped URL
// path and decodes it once. Validation (.., NUL, backslash, length) is
// workspace.Clean's; a percent-encoded "%2e%2e" decodes to ".." and is
// rejected there.
func filePath(c echo.Context) (string, error) {
	raw := c.Request().URL.EscapedPath()
	i := strings.Index(raw, "/files/")
	if i < 0 {
		return "", newError(http.StatusBadRequest, "bad_path", "missing file path")
	}
	p, err := url.PathUnescape(raw[i+len("/files/"):])
	if err != nil {
		return "", newError(http.StatusBadRequest, "bad_path", "invalid percent-encoding in path")
	}
	if p == "" {
		return "", newError(http.StatusBadRequest, "bad_path", "missing file path")
	}
	return p, nil
}

func (s *Server) listFiles(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	entries, truncated, err := sess.Files().List(c.QueryParam("path"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"entries": entries, "truncated": truncated})
}

// inlineTypes may be shown by the browser; everything else (HTML, SVG, ...)
// is an attachment, so it never runs on the gateway's origin.
var inlineTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

func (s *Server) downloadFile(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	p, err := filePath(c)
	if err != nil {
		return err
	}
	f, info, err := sess.Files().OpenFile(p)
	if err != nil {
		return err
	}
	defer f.Close()
	name := path.Base(p)
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	disposition := "attachment"
	if inlineTypes[strings.SplitN(ctype, ";", 2)[0]] {
		disposition = "inline"
	}
	h := c.Response().Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": name}))
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	http.ServeContent(c.Response(), c.Request(), "", info.ModTime(), f) // streams, supports Range
	return nil
}

func (s *Server) uploadFile(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	p, err := filePath(c)
	if err != nil {
		return err
	}
	switch c.QueryParam("type") {
	case "dir":
		if err := sess.Files().MakeDir(p); err != nil {
			return err
		}
		clean, _ := workspace.Clean(p)
		return c.JSON(http.StatusCreated, map[string]any{"path": clean, "type": "dir"})
	case "", "file":
	default:
		return newError(http.StatusBadRequest, "bad_request", "type must be file or dir")
	}
	if c.Request().ContentLength > s.cfg.MaxUploadBytes {
		return s.tooLarge()
	}
	n, err := sess.Files().Write(p, http.MaxBytesReader(c.Response(), c.Request().Body, s.cfg.MaxUploadBytes))
	if err != nil {
		return s.uploadError(err)
	}
	clean, _ := workspace.Clean(p)
	return c.JSON(http.StatusCreated, map[string]any{"path": clean, "size": n})
}

func (s *Server) tooLarge() error {
	return newError(http.StatusRequestEntityTooLarge, "too_large", "upload exceeds %d bytes", s.cfg.MaxUploadBytes)
}

func (s *Server) uploadError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return s.tooLarge()
	}
	return err
}

// uploadMultipart streams every "file" part of a multipart/form-data body
// into the workspace (under the optional "dir" field, which must come
// first). Nothing is buffered in memory or temporary files.
func (s *Server) uploadMultipart(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	if c.Request().ContentLength > s.cfg.MaxUploadBytes {
		return s.tooLarge()
	}
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, s.cfg.MaxUploadBytes)
	mr, err := c.Request().MultipartReader()
	if err != nil {
		return newError(http.StatusBadRequest, "bad_request", "expected a multipart/form-data body")
	}
	type stored struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
	}
	files := []stored{}
	dir := ""
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s.uploadError(newError(http.StatusBadRequest, "bad_request", "malformed multipart body"))
		}
		switch part.FormName() {
		case "dir":
			b, err := io.ReadAll(io.LimitReader(part, workspace.MaxPathBytes+1))
			if err != nil {
				return s.uploadError(err)
			}
			dir = string(b)
		case "file":
			name := part.FileName()
			if name == "" || strings.ContainsAny(name, "/\\") {
				return newError(http.StatusBadRequest, "bad_path", "each file part needs a plain file name")
			}
			p := name
			if dir != "" {
				p = strings.TrimSuffix(dir, "/") + "/" + name
			}
			n, err := sess.Files().Write(p, part)
			if err != nil {
				return s.uploadError(err)
			}
			clean, _ := workspace.Clean(p)
			files = append(files, stored{clean, n})
		}
		_ = part.Close()
	}
	if len(files) == 0 {
		return newError(http.StatusBadRequest, "bad_request", "no file parts (field name \"file\")")
	}
	return c.JSON(http.StatusCreated, map[string]any{"files": files})
}

func (s *Server) deleteFile(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	p, err := filePath(c)
	if err != nil {
		return err
	}
	if err := sess.Files().Remove(p); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
