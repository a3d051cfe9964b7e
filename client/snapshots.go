package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/glassroom/glassroom/api"
)

// CreateSnapshot captures session id: its workspace and its contexts'
// variables (the answer says which names were captured and which could
// not be). It waits for what the session's kernels are running. name
// ("" for none) labels it (ListSnapshots finds it by it).
func (c *Client) CreateSnapshot(ctx context.Context, id, name string) (*Snapshot, error) {
	var s Snapshot
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(id, "snapshots"), json: api.CreateSnapshotRequest{Name: name}}, &s, http.StatusCreated); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListSnapshots returns the key's snapshots, newest first; of one session
// only when sessionID is not "".
func (c *Client) ListSnapshots(ctx context.Context, sessionID string) ([]Snapshot, error) {
	p := "/v1/snapshots"
	if sessionID != "" {
		p += "?session_id=" + url.QueryEscape(sessionID)
	}
	var out api.SnapshotList
	if err := c.do(ctx, request{method: http.MethodGet, path: p}, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return out.Snapshots, nil
}

// GetSnapshot returns one snapshot (ErrNotFound: none of this key's).
func (c *Client) GetSnapshot(ctx context.Context, id string) (*Snapshot, error) {
	var s Snapshot
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/snapshots/" + url.PathEscape(id)}, &s, http.StatusOK); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSnapshot removes a snapshot (ErrNotFound: none of this key's).
func (c *Client) DeleteSnapshot(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/snapshots/" + url.PathEscape(id)}, nil, http.StatusNoContent)
}

// ForkSession starts count sessions from a capture of session id (which
// goes on): each entry is a new session, with its Restore, or the error
// that fork met.
func (c *Client) ForkSession(ctx context.Context, id string, count int) ([]Fork, error) {
	var out api.ForkResult
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(id, "fork"), json: api.ForkRequest{Count: &count}}, &out, http.StatusCreated); err != nil {
		return nil, err
	}
	return out.Forks, nil
}
