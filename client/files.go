package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// WriteFile stores the bytes of r at path in the session's workspace,
// creating parent directories and replacing an existing file. The body is
// streamed; pass its size (or -1 when unknown) so the gateway can refuse
// an oversized upload before it is sent.
func (c *Client) WriteFile(ctx context.Context, sessionID, path string, r io.Reader, size int64) (*FileInfo, error) {
	if path == "" {
		return nil, errors.New("client: WriteFile: empty path")
	}
	var fi FileInfo
	req := request{method: http.MethodPut, path: sessionPath(sessionID, "files", filePath(path)), body: r,
		ctype: "application/octet-stream", size: size, sized: size >= 0}
	if err := c.do(ctx, req, &fi, http.StatusCreated); err != nil {
		return nil, err
	}
	return &fi, nil
}

// MakeDir creates a directory and its parents (no error if it exists).
func (c *Client) MakeDir(ctx context.Context, sessionID, path string) (*FileInfo, error) {
	if path == "" {
		return nil, errors.New("client: MakeDir: empty path")
	}
	var fi FileInfo
	req := request{method: http.MethodPut, path: sessionPath(sessionID, "files", filePath(path)),
		query: url.Values{"type": {"dir"}}, sized: true}
	if err := c.do(ctx, req, &fi, http.StatusCreated, http.StatusOK); err != nil {
		return nil, err
	}
	return &fi, nil
}

// File is an open download. The caller must Close it.
type File struct {
	io.ReadCloser
	Size        int64 // -1 when unknown
	ContentType string
	ModTime     time.Time
}

// ReadFile opens a workspace file for reading (streamed; ErrNotFound when
// it does not exist).
func (c *Client) ReadFile(ctx context.Context, sessionID, path string) (*File, error) {
	if path == "" {
		return nil, errors.New("client: ReadFile: empty path")
	}
	resp, err := c.send(ctx, request{method: http.MethodGet, path: sessionPath(sessionID, "files", filePath(path))}, http.StatusOK) //nolint:bodyclose // the body becomes the File the caller closes
	if err != nil {
		return nil, err
	}
	f := &File{ReadCloser: resp.Body, Size: resp.ContentLength, ContentType: resp.Header.Get("Content-Type")}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		f.ModTime = t
	}
	return f, nil
}

// FileExists reports whether path exists in the workspace (a file or a
// directory). A missing session is an error (ErrNotFound), not false.
func (c *Client) FileExists(ctx context.Context, sessionID, path string) (bool, error) {
	if path == "" {
		return false, errors.New("client: FileExists: empty path")
	}
	// 200 is a file; 409 is a directory (it cannot be downloaded) or a
	// file busy being written: either way the path exists.
	resp, err := c.send(ctx, request{method: http.MethodHead, path: sessionPath(sessionID, "files", filePath(path))}, http.StatusOK, http.StatusConflict)
	if err == nil {
		resp.Body.Close()
		return true, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return false, err
	}
	// A HEAD answer has no body to tell a missing file from a missing
	// session; ask about the session.
	if _, serr := c.GetSession(ctx, sessionID); serr != nil {
		return false, serr
	}
	return false, nil
}

// ListFiles lists a workspace directory ("" for the root).
func (c *Client) ListFiles(ctx context.Context, sessionID, dir string) (*Listing, error) {
	var q url.Values
	if dir != "" {
		q = url.Values{"path": {dir}}
	}
	var l Listing
	if err := c.do(ctx, request{method: http.MethodGet, path: sessionPath(sessionID, "files"), query: q}, &l, http.StatusOK); err != nil {
		return nil, err
	}
	return &l, nil
}

// RemoveFile deletes a file, or a directory with its contents.
func (c *Client) RemoveFile(ctx context.Context, sessionID, path string) error {
	if path == "" {
		return errors.New("client: RemoveFile: empty path")
	}
	return c.do(ctx, request{method: http.MethodDelete, path: sessionPath(sessionID, "files", filePath(path))}, nil, http.StatusNoContent)
}

// ReadSandboxFile reads a file of the sandbox's own file system by its
// absolute path (/proc/sys/kernel/random/boot_id), read-only, as the
// sandbox's user sees it; a path under /home/user is the workspace's
// file. At most 16 MiB (a larger one is an *APIError, 413).
func (c *Client) ReadSandboxFile(ctx context.Context, sessionID, path string) ([]byte, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: sessionPath(sessionID, "sandbox-files"), query: url.Values{"path": {path}}}, http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20+1))
	if err != nil {
		return nil, fmt.Errorf("client: read sandbox file: %w", err)
	}
	return b, nil
}

// StatSandboxFile describes an entry of the sandbox's own file system by
// its absolute path (a last symlink not followed); Path is the path asked
// for, canonical.
func (c *Client) StatSandboxFile(ctx context.Context, sessionID, path string) (*FileEntry, error) {
	var e FileEntry
	if err := c.do(ctx, request{method: http.MethodGet, path: sessionPath(sessionID, "sandbox-files", "info"), query: url.Values{"path": {path}}}, &e, http.StatusOK); err != nil {
		return nil, err
	}
	return &e, nil
}
