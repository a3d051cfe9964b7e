package jupyter_test

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// jclient is a small Jupyter client of a kernel's channels WebSocket, for
// the tests: it speaks the legacy framing (JSON text frames, binary frames
// for messages with buffers) or the v1.kernel.websocket.jupyter.org
// subprotocol, written here from the protocol's description, not from the
// gateway's code. It talks to glassroom directly or to a jupyter_server
// in front of it.
type jclient struct {
	t       testing.TB
	ws      *websocket.Conn
	v1      bool
	session string
	in      chan jm
	done    chan struct{}
	errMu   sync.Mutex
	err     error
	wmu     sync.Mutex
}

// jm is a message a jclient received.
type jm struct {
	Channel  string
	Header   jhdr
	Parent   jhdr
	Metadata map[string]any
	Content  map[string]any
	Buffers  [][]byte
	Binary   bool // it came in a binary frame
	RawJSON  string
}

type jhdr struct {
	MsgID    string `json:"msg_id"`
	MsgType  string `json:"msg_type"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	Version  string `json:"version"`
}

func (m jm) String() string {
	c, _ := json.Marshal(m.Content)
	if len(c) > 300 {
		c = append(c[:300], "..."...)
	}
	return fmt.Sprintf("%s/%s(parent %s) %s", m.Channel, m.Header.MsgType, m.Parent.MsgID, c)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// dialJupyter opens url (ws://.../api/kernels/{id}/channels...) with hdr;
// v1 offers the v1 subprotocol.
func dialJupyter(t testing.TB, url string, hdr http.Header, v1 bool) *jclient {
	t.Helper()
	c, err := tryDialJupyter(url, hdr, v1)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.t = t
	t.Cleanup(c.close)
	return c
}

func tryDialJupyter(url string, hdr http.Header, v1 bool) (*jclient, error) {
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	if v1 {
		d.Subprotocols = []string{"v1.kernel.websocket.jupyter.org"}
	}
	ws, resp, err := d.Dial(url, hdr)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("%w (HTTP %d)", err, resp.StatusCode)
		}
		return nil, err
	}
	if v1 && ws.Subprotocol() != "v1.kernel.websocket.jupyter.org" {
		ws.Close()
		return nil, fmt.Errorf("subprotocol %q selected", ws.Subprotocol())
	}
	c := &jclient{ws: ws, v1: v1, session: randomHex(16), in: make(chan jm, 4096), done: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

func (c *jclient) close() {
	c.ws.Close()
	<-c.done
}

func (c *jclient) readLoop() {
	defer close(c.done)
	defer close(c.in)
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			c.errMu.Lock()
			c.err = err
			c.errMu.Unlock()
			return
		}
		m, err := decodeJupyterFrame(data, typ == websocket.BinaryMessage, c.v1)
		if err != nil {
			c.errMu.Lock()
			c.err = fmt.Errorf("undecodable frame %q: %w", data, err)
			c.errMu.Unlock()
			return
		}
		c.in <- m
	}
}

func decodeJupyterFrame(data []byte, bin, v1 bool) (jm, error) {
	var m jm
	m.Binary = bin
	var parts [][]byte
	switch {
	case v1:
		if !bin {
			return m, fmt.Errorf("text frame on v1")
		}
		n := int(binary.LittleEndian.Uint64(data))
		offs := make([]int, n)
		for i := range offs {
			offs[i] = int(binary.LittleEndian.Uint64(data[8*(i+1):]))
		}
		if offs[n-1] != len(data) {
			return m, fmt.Errorf("last offset %d, frame %d bytes", offs[n-1], len(data))
		}
		for i := 0; i+1 < n; i++ {
			parts = append(parts, data[offs[i]:offs[i+1]])
		}
		m.Channel = string(parts[0])
		for i, dst := range []any{&m.Header, &m.Parent, &m.Metadata, &m.Content} {
			if err := json.Unmarshal(parts[i+1], dst); err != nil {
				return m, err
			}
		}
		m.RawJSON = string(parts[4])
		m.Buffers = parts[5:]
		return m, nil
	case bin:
		n := int(binary.BigEndian.Uint32(data))
		offs := make([]int, n+1)
		for i := 0; i < n; i++ {
			offs[i] = int(binary.BigEndian.Uint32(data[4*(i+1):]))
		}
		offs[n] = len(data)
		for i := 0; i < n; i++ {
			parts = append(parts, data[offs[i]:offs[i+1]])
		}
		data = parts[0]
		m.Buffers = parts[1:]
	}
	var l struct {
		Channel  string          `json:"channel"`
		Header   jhdr            `json:"header"`
		Parent   jhdr            `json:"parent_header"`
		Metadata map[string]any  `json:"metadata"`
		Content  json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return m, err
	}
	m.Channel, m.Header, m.Parent, m.Metadata, m.RawJSON = l.Channel, l.Header, l.Parent, l.Metadata, string(l.Content)
	return m, json.Unmarshal(l.Content, &m.Content)
}

// header makes a request header of this client.
func (c *jclient) header(msgType string) map[string]any {
	return map[string]any{"msg_id": randomHex(16), "msg_type": msgType, "session": c.session, "username": "test",
		"date": time.Now().UTC().Format(time.RFC3339Nano), "version": "5.3"}
}

// sendWith sends a message with header h; buffers force a binary frame in
// the legacy framing.
func (c *jclient) sendWith(channel string, h map[string]any, content any, buffers ...[]byte) string {
	c.t.Helper()
	hdr, _ := json.Marshal(h)
	body, _ := json.Marshal(content)
	var data []byte
	typ := websocket.TextMessage
	switch {
	case c.v1:
		parts := append([][]byte{[]byte(channel), hdr, []byte("{}"), []byte("{}"), body}, buffers...)
		n := len(parts) + 1
		data = make([]byte, 8*(n+1))
		binary.LittleEndian.PutUint64(data, uint64(n))
		off := 8 * (n + 1)
		for i, p := range parts {
			binary.LittleEndian.PutUint64(data[8*(i+1):], uint64(off))
			off += len(p)
		}
		binary.LittleEndian.PutUint64(data[8*n:], uint64(off))
		data = append(data, bytes.Join(parts, nil)...)
		typ = websocket.BinaryMessage
	default:
		js, _ := json.Marshal(map[string]any{"channel": channel, "header": json.RawMessage(hdr), "parent_header": map[string]any{},
			"metadata": map[string]any{}, "content": json.RawMessage(body), "buffers": []any{}})
		if len(buffers) == 0 {
			data = js
			break
		}
		parts := append([][]byte{js}, buffers...)
		data = make([]byte, 4*(len(parts)+1))
		binary.BigEndian.PutUint32(data, uint32(len(parts)))
		off := len(data)
		for i, p := range parts {
			binary.BigEndian.PutUint32(data[4*(i+1):], uint32(off))
			off += len(p)
		}
		data = append(data, bytes.Join(parts, nil)...)
		typ = websocket.BinaryMessage
	}
	c.raw(typ, data)
	return h["msg_id"].(string)
}

func (c *jclient) raw(typ int, data []byte) {
	c.t.Helper()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.ws.WriteMessage(typ, data); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *jclient) send(channel, msgType string, content any, buffers ...[]byte) string {
	c.t.Helper()
	return c.sendWith(channel, c.header(msgType), content, buffers...)
}

// next returns the next message, failing after d.
func (c *jclient) next(d time.Duration) (jm, bool) {
	select {
	case m, ok := <-c.in:
		return m, ok
	case <-time.After(d):
		return jm{}, false
	}
}

// until reads messages until pred matches one, returning all it read.
func (c *jclient) until(what string, pred func(jm) bool) []jm {
	c.t.Helper()
	var got []jm
	deadline := time.After(90 * time.Second)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.errMu.Lock()
				err := c.err
				c.errMu.Unlock()
				c.t.Fatalf("connection ended waiting for %s after %v: %v", what, got, err)
			}
			got = append(got, m)
			if pred(m) {
				return got
			}
		case <-deadline:
			c.t.Fatalf("no %s within 90s; got %v", what, got)
		}
	}
}

// request sends a request and reads until its reply and its idle status
// have both arrived (a Jupyter client's "done"); it returns the reply and
// every message read.
func (c *jclient) request(channel, msgType string, content any, buffers ...[]byte) (jm, []jm) {
	c.t.Helper()
	id := c.send(channel, msgType, content, buffers...)
	return c.await(id, msgType)
}

func (c *jclient) await(id, what string) (jm, []jm) {
	c.t.Helper()
	var reply *jm
	idle := false
	got := c.until(what+" reply and idle", func(m jm) bool {
		if m.Parent.MsgID != id {
			return false
		}
		if m.Channel != "iopub" && strings.HasSuffix(m.Header.MsgType, "_reply") {
			reply = &m
		}
		if m.Channel == "iopub" && m.Header.MsgType == "status" && m.Content["execution_state"] == "idle" {
			idle = true
		}
		return reply != nil && idle
	})
	return *reply, got
}

// sync returns, with every message read meanwhile, once the gateway has
// handled every message c sent before: it reads a connection's messages
// in order, and answers a request it does not know at once, busy then
// idle, without asking the kernel (busy with an input(), say).
func (c *jclient) sync() []jm {
	c.t.Helper()
	id := c.send("shell", "glassroom_test_sync_request", map[string]any{})
	return c.until("the idle of a sync", func(m jm) bool {
		return m.Parent.MsgID == id && m.Header.MsgType == "status" && m.Content["execution_state"] == "idle"
	})
}

// execute runs code and returns the execute_reply and the iopub messages
// of the request.
func (c *jclient) execute(code string) (jm, []jm) {
	c.t.Helper()
	rep, all := c.request("shell", "execute_request", map[string]any{"code": code, "silent": false, "store_history": true,
		"user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true})
	var iopub []jm
	for _, m := range all {
		if m.Channel == "iopub" && m.Parent.MsgID == rep.Parent.MsgID {
			iopub = append(iopub, m)
		}
	}
	return rep, iopub
}

// find returns the first message of type typ, or fails.
func find(t testing.TB, msgs []jm, typ string) jm {
	t.Helper()
	for _, m := range msgs {
		if m.Header.MsgType == typ {
			return m
		}
	}
	t.Fatalf("no %s in %v", typ, msgs)
	return jm{}
}

// resultText is the text/plain of an execution's execute_result.
func resultText(t testing.TB, msgs []jm) string {
	t.Helper()
	data, _ := find(t, msgs, "execute_result").Content["data"].(map[string]any)
	s, _ := data["text/plain"].(string)
	return s
}
