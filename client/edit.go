package client

import (
	"context"
	"errors"
	"net/http"

	"github.com/glassroom/glassroom/api"
)

type (
	// EditRequest is the wire type api.EditRequest: one text-editor
	// command (view, create, str_replace, insert).
	EditRequest = api.EditRequest

	// EditResult is the wire type api.EditResult.
	EditResult = api.EditResult
)

// The commands of EditRequest (package api).
const (
	EditView       = api.EditView
	EditCreate     = api.EditCreate
	EditStrReplace = api.EditStrReplace
	EditInsert     = api.EditInsert
)

// EditFile runs one text-editor command on a UTF-8 text file of the
// session's workspace (PATCH /v1/sessions/{id}/files/{path}): view it with
// numbered lines, create it, replace the one occurrence of a string, or
// insert lines after a line. Edits are atomic and a failed one changes
// nothing. Besides the usual errors: str_replace whose old_str occurs 0
// times or more than once is an *APIError matching ErrConflict with Code
// "no_match" or "multiple_matches" (its Message says how many and on which
// lines); a file the session's code changed meanwhile, ErrConflict with
// "file_changed"; a file that is not text, Code "not_text" (HTTP 422); one
// too large, ErrTooLarge.
//
//	ed, err := c.EditFile(ctx, id, "app.py", client.EditRequest{Command: client.EditStrReplace,
//		OldStr: api.Ptr("return 1"), NewStr: api.Ptr("return 2")})
func (c *Client) EditFile(ctx context.Context, sessionID, path string, req EditRequest) (*EditResult, error) {
	if path == "" {
		return nil, errors.New("client: EditFile: empty path")
	}
	var res EditResult
	r := request{method: http.MethodPatch, path: sessionPath(sessionID, "files", filePath(path)), json: req}
	if err := c.do(ctx, r, &res, http.StatusOK, http.StatusCreated); err != nil {
		return nil, err
	}
	return &res, nil
}
