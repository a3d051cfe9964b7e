package loadgen

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// Native drives glassroom's own API: POST /v1/sessions, then executes over
// the session's WebSocket (/v1/sessions/{id}/ws).
type Native struct {
	BaseURL string // http://host:port
	Key     string
	HTTP    *http.Client // default: a client with a 60 s timeout
	// Cold asks for sessions that bypass the warm pool (a session that asks
	// for an env starts cold).
	Cold bool
}

// Name implements Target.
func (n Native) Name() string {
	if n.Cold {
		return "glassroom " + n.BaseURL + " (cold)"
	}
	return "glassroom " + n.BaseURL
}

func (n Native) http() *http.Client {
	if n.HTTP != nil {
		return n.HTTP
	}
	return &http.Client{Timeout: 60 * time.Second}
}

// Open implements Target.
func (n Native) Open(ctx context.Context) (Conn, error) {
	var s struct{ ID string }
	var body any
	if n.Cold {
		body = map[string]any{"env": map[string]string{"BENCH_COLD": "1"}}
	}
	if err := doJSON(ctx, n.http(), http.MethodPost, n.BaseURL+"/v1/sessions", "Bearer "+n.Key, body, http.StatusCreated, &s); err != nil {
		return nil, err
	}
	u := "ws" + strings.TrimPrefix(n.BaseURL, "http") + "/v1/sessions/" + s.ID + "/ws"
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, u, http.Header{"Authorization": {"Bearer " + n.Key}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("loadgen: websocket: %w", err)
	}
	return &nativeConn{n: n, id: s.ID, ws: ws}, nil
}

type nativeConn struct {
	n  Native
	id string
	ws *websocket.Conn
	k  int
}

// Execute sends an execute frame and reads until its done.
func (c *nativeConn) Execute(ctx context.Context, code string) (time.Duration, error) {
	c.k++
	id := fmt.Sprintf("x%d", c.k)
	if d, ok := ctx.Deadline(); ok {
		_ = c.ws.SetReadDeadline(d.Add(30 * time.Second))
	}
	if err := c.ws.WriteJSON(map[string]any{"type": "execute", "id": id, "code": code}); err != nil {
		return 0, err
	}
	for {
		var f struct {
			Type, ID, Status, Message string
			DurationMS                float64 `json:"duration_ms"`
		}
		if err := c.ws.ReadJSON(&f); err != nil {
			return 0, err
		}
		switch {
		case f.Type == "done" && f.ID == id:
			if f.Status != "ok" {
				return 0, fmt.Errorf("loadgen: execution %s", f.Status)
			}
			return time.Duration(f.DurationMS * float64(time.Millisecond)), nil
		case f.Type == "rejected":
			return 0, fmt.Errorf("loadgen: rejected: %s", f.Message)
		}
	}
}

// Close implements Conn.
func (c *nativeConn) Close(ctx context.Context) error {
	c.ws.Close()
	return doJSON(ctx, c.n.http(), http.MethodDelete, c.n.BaseURL+"/v1/sessions/"+c.id, "Bearer "+c.n.Key, nil, http.StatusNoContent, nil)
}

// doJSON does one request and decodes a JSON answer of the wanted status.
func doJSON(ctx context.Context, hc *http.Client, method, url, auth string, body any, want int, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("loadgen: %s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		return fmt.Errorf("loadgen: %s %s: status %d: %.200s", method, url, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("loadgen: %s %s: %w", method, url, err)
		}
	}
	return nil
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
