package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/workspace"
	"github.com/glassroom/glassroom/workspace/fileedit"
	"github.com/labstack/echo/v4"
)

// filesAPI serves the workspace file API under /v1/sessions/{id}/files.
// File calls do not wait for the execution queue, so they work while code
// runs. Safe for concurrent use.
type filesAPI struct {
	session   func(echo.Context) (*sessions.Session, error) // the session a route names, of the request's tenant
	maxUpload int64                                         // bytes of one upload (Config.MaxUploadBytes)
	decode    func(echo.Context, any) error                 // reads a JSON body (Server.decodeJSON)
	editor    *fileedit.Editor                              // PATCH's text edits (Config.MaxEditBytes)
}

// route registers the file API's routes on the authenticated /v1 group.
func (f *filesAPI) route(g *echo.Group) {
	g.GET("/sessions/:id/files", f.list)
	g.POST("/sessions/:id/files", f.uploadMultipart)
	g.GET("/sessions/:id/files/*", f.download)
	g.HEAD("/sessions/:id/files/*", f.download)
	g.PUT("/sessions/:id/files/*", f.upload)
	g.DELETE("/sessions/:id/files/*", f.remove)
	g.PATCH("/sessions/:id/files/*", f.edit)
	g.GET("/sessions/:id/sandbox-files", f.readSandboxFile)
	g.HEAD("/sessions/:id/sandbox-files", f.readSandboxFile)
	g.GET("/sessions/:id/sandbox-files/info", f.statSandboxFile)
}

// filePath extracts the workspace path after /files/ from the escaped URL
// path and decodes it once. Validation (.., NUL, backslash, length) is
// workspace.Clean's; a percent-encoded "%2e%2e" decodes to ".." and is
// rejected there.
func filePath(c echo.Context) (string, error) {
	raw := c.Request().URL.EscapedPath()
	i := strings.Index(raw, "/files/")
	if i < 0 {
		return "", httperr.New(http.StatusBadRequest, "bad_path", "missing file path")
	}
	p, err := url.PathUnescape(raw[i+len("/files/"):])
	if err != nil {
		return "", httperr.New(http.StatusBadRequest, "bad_path", "invalid percent-encoding in path")
	}
	if p == "" {
		return "", httperr.New(http.StatusBadRequest, "bad_path", "missing file path")
	}
	return p, nil
}

func (f *filesAPI) list(c echo.Context) error {
	sess, err := f.session(c)
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

func (f *filesAPI) download(c echo.Context) error {
	sess, err := f.session(c)
	if err != nil {
		return err
	}
	p, err := filePath(c)
	if err != nil {
		return err
	}
	return f.serveFile(c, sess, p)
}

// serveFile streams the workspace file p of sess (Range and HEAD too),
// never as something the browser runs on the gateway's origin.
func (f *filesAPI) serveFile(c echo.Context, sess *sessions.Session, p string) error {
	file, info, err := sess.Files().OpenFile(p)
	if err != nil {
		return err
	}
	defer file.Close()
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
	http.ServeContent(c.Response(), c.Request(), "", info.ModTime(), file) // streams, supports Range
	return nil
}

func (f *filesAPI) upload(c echo.Context) error {
	sess, err := f.session(c)
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
		return httperr.New(http.StatusBadRequest, "bad_request", "type must be file or dir")
	}
	meta, err := metadataHeader(c)
	if err != nil {
		return err
	}
	return f.writeFile(c, sess, p, c.Request().Body, meta)
}

// MetadataHeader carries, on a file upload (PUT), the file's metadata as
// a JSON object of strings (workspace.CheckMetadata's rules; E2B's
// files.write(..., metadata=)). Without it the new file has none.
const MetadataHeader = "Glassroom-File-Metadata"

// metadataHeader reads MetadataHeader: nil when absent; a bad one is an
// error before anything is written.
func metadataHeader(c echo.Context) (map[string]string, error) {
	h := c.Request().Header.Get(MetadataHeader)
	if h == "" {
		return nil, nil
	}
	var meta map[string]string
	if err := json.Unmarshal([]byte(h), &meta); err != nil {
		return nil, httperr.New(http.StatusBadRequest, "bad_request", "%s must be a JSON object of strings", MetadataHeader)
	}
	if err := workspace.CheckMetadata(meta); err != nil {
		return nil, err
	}
	return meta, nil
}

// writeFile writes body (at most MaxUploadBytes) to the workspace file p
// of sess, replacing it, with meta as its metadata (nil: none), and
// answers 201 with its path, size and metadata.
func (f *filesAPI) writeFile(c echo.Context, sess *sessions.Session, p string, body io.Reader, meta map[string]string) error {
	if c.Request().ContentLength > f.maxUpload {
		return f.tooLarge()
	}
	n, err := sess.Files().Write(p, http.MaxBytesReader(c.Response(), io.NopCloser(body), f.maxUpload))
	if err != nil {
		return f.uploadError(err)
	}
	clean, _ := workspace.Clean(p)
	answer := map[string]any{"path": clean, "size": n}
	if len(meta) > 0 {
		ms, ok := sess.Files().(workspace.MetadataSetter)
		if !ok {
			return httperr.New(http.StatusNotImplemented, "no_metadata", "this gateway's workspaces keep no file metadata")
		}
		if err := ms.SetMetadata(clean, meta); err != nil {
			return err
		}
		answer["metadata"] = meta
	}
	return c.JSON(http.StatusCreated, answer)
}

func (f *filesAPI) tooLarge() error {
	return httperr.New(http.StatusRequestEntityTooLarge, "too_large", "upload exceeds %d bytes", f.maxUpload)
}

func (f *filesAPI) uploadError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return f.tooLarge()
	}
	return err
}

// uploadMultipart streams every "file" part of a multipart/form-data body
// into the workspace (under the optional "dir" field, which must come
// first). Nothing is buffered in memory or temporary files.
func (f *filesAPI) uploadMultipart(c echo.Context) error {
	sess, err := f.session(c)
	if err != nil {
		return err
	}
	if c.Request().ContentLength > f.maxUpload {
		return f.tooLarge()
	}
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, f.maxUpload)
	mr, err := c.Request().MultipartReader()
	if err != nil {
		return httperr.New(http.StatusBadRequest, "bad_request", "expected a multipart/form-data body")
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
			return f.uploadError(httperr.New(http.StatusBadRequest, "bad_request", "malformed multipart body"))
		}
		switch part.FormName() {
		case "dir":
			b, err := io.ReadAll(io.LimitReader(part, workspace.MaxPathBytes+1))
			if err != nil {
				return f.uploadError(err)
			}
			dir = string(b)
		case "file":
			name := part.FileName()
			if name == "" || strings.ContainsAny(name, "/\\") {
				return httperr.New(http.StatusBadRequest, "bad_path", "each file part needs a plain file name")
			}
			p := name
			if dir != "" {
				p = strings.TrimSuffix(dir, "/") + "/" + name
			}
			n, err := sess.Files().Write(p, part)
			if err != nil {
				return f.uploadError(err)
			}
			clean, _ := workspace.Clean(p)
			files = append(files, stored{clean, n})
		}
		_ = part.Close()
	}
	if len(files) == 0 {
		return httperr.New(http.StatusBadRequest, "bad_request", "no file parts (field name \"file\")")
	}
	return c.JSON(http.StatusCreated, map[string]any{"files": files})
}

func (f *filesAPI) remove(c echo.Context) error {
	sess, err := f.session(c)
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

// edit runs one text-editor command (api.EditRequest) on a workspace
// file: view, create, str_replace or insert. The body is bounded like
// every JSON body (Config.MaxBodyBytes), the file by Config.MaxEditBytes.
func (f *filesAPI) edit(c echo.Context) error {
	sess, err := f.session(c)
	if err != nil {
		return err
	}
	p, err := filePath(c)
	if err != nil {
		return err
	}
	var req api.EditRequest
	if err := f.decode(c, &req); err != nil {
		return err
	}
	res, err := f.editor.Do(sess.Files(), p, fileedit.Command{Command: req.Command, ViewRange: req.ViewRange,
		FileText: req.FileText, OldStr: req.OldStr, NewStr: req.NewStr, InsertLine: req.InsertLine})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return c.JSON(status, api.EditResult{Path: res.Path, Command: res.Command, Created: res.Created, Size: res.Size,
		Lines: res.Lines, Text: res.Text, StartLine: res.StartLine, EndLine: res.EndLine})
}
