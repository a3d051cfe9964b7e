package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/glassroom/glassroom/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// resourcePrefix starts every workspace file's URI:
// glassroom://sessions/{id}/files/{path}, path segments percent-encoded.
const resourcePrefix = "glassroom://sessions/"

// maxListDirs bounds the directories resources/list walks per session.
const maxListDirs = 64

// fileURI is the resource URI of a workspace file.
func fileURI(sessionID, p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return resourcePrefix + url.PathEscape(sessionID) + "/files/" + strings.Join(segs, "/")
}

// parseFileURI splits a resource URI into session id and workspace path.
func parseFileURI(uri string) (string, string, error) {
	rest, ok := strings.CutPrefix(uri, resourcePrefix)
	if !ok {
		return "", "", fmt.Errorf("not a glassroom file URI (%s{session_id}/files/{path})", resourcePrefix)
	}
	id, p, ok := strings.Cut(rest, "/files/")
	if !ok || id == "" || p == "" {
		return "", "", fmt.Errorf("not a glassroom file URI (%s{session_id}/files/{path})", resourcePrefix)
	}
	id, err1 := url.PathUnescape(id)
	p, err2 := url.PathUnescape(p)
	if err := errors.Join(err1, err2); err != nil {
		return "", "", fmt.Errorf("invalid percent-encoding in %q: %w", uri, err)
	}
	return id, p, nil
}

// registerResources serves the caller's workspace files as resources: a
// template for resources/read, and resources/list answered from the
// caller's sessions (bounded by Config.MaxResources).
func (t *tools) registerResources(s *sdk.Server) {
	s.AddResourceTemplate(&sdk.ResourceTemplate{
		URITemplate: resourcePrefix + "{session_id}/files/{+path}",
		Name:        "workspace-file",
		Title:       "A file of a session's workspace",
		Description: "A file in the workspace of one of your sessions. Text comes back as text, other files as a base64 blob with " +
			"their MIME type, up to a size limit.",
	}, t.readResource)
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			return t.listResources(ctx)
		}
	})
}

// listResources lists the files of the caller's sessions, breadth first
// per session, at most Config.MaxResources in all.
func (t *tools) listResources(ctx context.Context) (*sdk.ListResourcesResult, error) {
	ss, err := t.b.ListSessions(ctx)
	if err != nil {
		return nil, explain(err, "", "")
	}
	out := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}}
	for _, s := range ss {
		dirs := []string{""}
		for walked := 0; len(dirs) > 0 && walked < maxListDirs; walked++ {
			dir := dirs[0]
			dirs = dirs[1:]
			l, err := t.b.ListFiles(ctx, s.ID, dir)
			if err != nil {
				break // the session ended meanwhile, or cannot be read: skip it
			}
			for _, e := range l.Entries {
				switch e.Type {
				case "dir":
					dirs = append(dirs, e.Path)
				case "file":
					if len(out.Resources) >= t.cfg.MaxResources {
						return out, nil
					}
					out.Resources = append(out.Resources, &sdk.Resource{URI: fileURI(s.ID, e.Path), Name: e.Path,
						Title: path.Base(e.Path), Description: "in session " + s.ID, MIMEType: mimeOf(e.Path), Size: e.Size})
				}
			}
		}
	}
	return out, nil
}

// mimeOf guesses a file's type from its name ("" when unknown).
func mimeOf(p string) string {
	if m := imageTypes[strings.ToLower(path.Ext(p))]; m != "" {
		return m
	}
	return mime.TypeByExtension(path.Ext(p))
}

func (t *tools) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	id, p, err := parseFileURI(uri)
	if err != nil {
		return nil, err
	}
	data, size, ctype, err := t.readBounded(ctx, id, p, int64(t.cfg.MaxResourceBytes))
	if err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		return nil, err
	}
	if int64(len(data)) > int64(t.cfg.MaxResourceBytes) {
		return nil, fmt.Errorf("%s is %s; resources are read up to %s: read part of it with execute_python or run_command",
			p, humanBytes(size), humanBytes(int64(t.cfg.MaxResourceBytes)))
	}
	rc := &sdk.ResourceContents{URI: uri, MIMEType: ctype}
	if kind := classify(p, data); kind == "text" {
		rc.Text = string(data)
		if rc.MIMEType == "" || strings.HasPrefix(rc.MIMEType, "application/octet-stream") {
			rc.MIMEType = "text/plain; charset=utf-8"
		}
	} else {
		rc.Blob = data
		if kind != "" {
			rc.MIMEType = kind
		}
		if rc.MIMEType == "" {
			rc.MIMEType = "application/octet-stream"
		}
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{rc}}, nil
}

// readBounded reads at most limit+1 bytes of a workspace file, with its
// size and content type (the gateway's, else one guessed from its name).
func (t *tools) readBounded(ctx context.Context, id, p string, limit int64) ([]byte, int64, string, error) {
	f, err := t.b.ReadFile(ctx, id, p)
	if err != nil {
		return nil, 0, "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, "", fmt.Errorf("reading %s: %w", p, err)
	}
	size := f.Size
	if size < 0 {
		size = int64(len(data))
	}
	ctype := mimeOf(p)
	if ctype == "" {
		ctype = f.ContentType
	}
	return data, size, ctype, nil
}

// classify says what data is: "text" (UTF-8 without NUL), an image MIME
// type (sniffed or by extension), or "" (other binary).
func classify(p string, data []byte) string {
	if sniffed := http.DetectContentType(data); strings.HasPrefix(sniffed, "image/") && sniffed != "image/svg+xml" {
		return sniffed
	}
	if m := imageTypes[strings.ToLower(path.Ext(p))]; m != "" {
		return m
	}
	if looksText(data, false) && utf8.Valid(data) {
		return "text"
	}
	return ""
}
