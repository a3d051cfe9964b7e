package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// Jupyter drives the Jupyter Server kernels API: POST /api/kernels, then
// execute_request messages over /api/kernels/{id}/channels (JSON text
// frames with a channel field). It works against a Jupyter server and
// against glassroom's /api alike.
type Jupyter struct {
	BaseURL string // http://host:port (with any base path)
	Token   string
	Label   string // name in results (default "jupyter <url>")
	HTTP    *http.Client
}

// Name implements Target.
func (j Jupyter) Name() string {
	if j.Label != "" {
		return j.Label
	}
	return "jupyter " + j.BaseURL
}

func (j Jupyter) http() *http.Client {
	if j.HTTP != nil {
		return j.HTTP
	}
	return &http.Client{Timeout: 60 * time.Second}
}

// Open implements Target.
func (j Jupyter) Open(ctx context.Context) (Conn, error) {
	var k struct{ ID string }
	if err := doJSON(ctx, j.http(), http.MethodPost, j.BaseURL+"/api/kernels", "token "+j.Token, map[string]any{"name": "python3"}, http.StatusCreated, &k); err != nil {
		return nil, err
	}
	session := randomID()
	u := "ws" + strings.TrimPrefix(j.BaseURL, "http") + "/api/kernels/" + k.ID + "/channels?session_id=" + session
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, u, http.Header{"Authorization": {"token " + j.Token}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("loadgen: channels: %w", err)
	}
	c := &jupyterConn{j: j, id: k.ID, session: session, ws: ws}
	// Wait until the kernel answers on this connection: clients that send
	// before that may lose their first message (jupyter_server connects to
	// the kernel lazily).
	if err := c.request(ctx, "kernel_info_request", map[string]any{}); err != nil {
		ws.Close()
		return nil, err
	}
	return c, nil
}

type jupyterConn struct {
	j       Jupyter
	id      string
	session string
	ws      *websocket.Conn
}

type jmsg struct {
	Header       map[string]any `json:"header"`
	ParentHeader struct {
		MsgID string `json:"msg_id"`
	} `json:"parent_header"`
	Metadata map[string]any `json:"metadata"`
	Content  map[string]any `json:"content"`
	Channel  string         `json:"channel"`
	MsgType  string         `json:"msg_type"`
}

// request sends msgType on shell and waits for its reply and the kernel's
// idle status for it.
func (c *jupyterConn) request(ctx context.Context, msgType string, content map[string]any) error {
	id := randomID()
	msg := map[string]any{
		"header": map[string]any{"msg_id": id, "msg_type": msgType, "session": c.session, "username": "loadgen",
			"date": time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"), "version": "5.3"},
		"parent_header": map[string]any{}, "metadata": map[string]any{}, "content": content, "channel": "shell", "buffers": []any{},
	}
	if d, ok := ctx.Deadline(); ok {
		_ = c.ws.SetReadDeadline(d.Add(30 * time.Second))
	} else {
		_ = c.ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	}
	if err := c.ws.WriteJSON(msg); err != nil {
		return err
	}
	replied, idle := false, false
	for !replied || !idle {
		var m jmsg
		if err := c.ws.ReadJSON(&m); err != nil {
			return err
		}
		if m.ParentHeader.MsgID != id {
			continue
		}
		mt, _ := m.Header["msg_type"].(string)
		switch {
		case m.Channel == "shell" && strings.HasSuffix(mt, "_reply"):
			replied = true
			if st, _ := m.Content["status"].(string); st != "ok" {
				return fmt.Errorf("loadgen: %s status %s", mt, st)
			}
		case m.Channel == "iopub" && mt == "status":
			if st, _ := m.Content["execution_state"].(string); st == "idle" {
				idle = true
			}
		}
	}
	return nil
}

// Execute implements Conn.
func (c *jupyterConn) Execute(ctx context.Context, code string) (time.Duration, error) {
	return 0, c.request(ctx, "execute_request", map[string]any{
		"code": code, "silent": false, "store_history": true, "user_expressions": map[string]any{},
		"allow_stdin": false, "stop_on_error": true,
	})
}

// Close implements Conn.
func (c *jupyterConn) Close(ctx context.Context) error {
	c.ws.Close()
	return doJSON(ctx, c.j.http(), http.MethodDelete, c.j.BaseURL+"/api/kernels/"+c.id, "token "+c.j.Token, nil, http.StatusNoContent, nil)
}
