package gateway_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	glclient "github.com/glassroom/glassroom/client"
	"github.com/gorilla/websocket"
)

// BenchmarkJupyterRoundTrip measures an `x + 1` round trip over a kernel's
// Jupyter channels (legacy framing and the v1 subprotocol) beside the same
// round trip over the native /v1 WebSocket: the same gateway, the same
// kernel code, lean clients that decode only what they wait for (each on
// a session of its own). The
// side-by-side sub-benchmark alternates the three in every iteration, so a
// busy machine slows them alike, and reports each one's mean and p50 and
// their ratio (jupyter/v1).
//
//	go test -run '^$' -bench JupyterRoundTrip -benchtime 300x ./gateway/
func BenchmarkJupyterRoundTrip(b *testing.B) {
	g := apptest.Start(b, apptest.Local(b), apptest.Options{})
	ws := "ws" + strings.TrimPrefix(g.URL, "http")
	hdr := http.Header{"Authorization": {"Bearer " + apptest.KeyA}}
	// One session per client, so that no client reads another's events.
	session := func() string {
		s, err := g.Client(b, apptest.KeyA).CreateSession(b.Context(), glclient.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return s.ID
	}
	dial := func(url string, protocols ...string) *websocket.Conn {
		d := websocket.Dialer{Subprotocols: protocols}
		c, resp, err := d.Dial(url, hdr)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		b.Cleanup(func() { c.Close() })
		return c
	}
	native := &nativeRT{c: dial(ws + "/v1/sessions/" + session() + "/ws")}
	legacy := &jupyterRT{c: dial(ws + "/api/kernels/" + kernelIDOf(session()) + "/channels?session_id=bench-legacy"), session: "bench-legacy"}
	v1 := &jupyterRT{c: dial(ws+"/api/kernels/"+kernelIDOf(session())+"/channels?session_id=bench-v1", "v1.kernel.websocket.jupyter.org"),
		v1: true, session: "bench-v1"}
	for _, rt := range []roundTripper{native, legacy, v1} {
		rt.run(b, "x = 41")
		for range 20 { // warm up
			rt.run(b, "x + 1")
		}
	}
	single := func(rt roundTripper) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				rt.run(b, "x + 1")
			}
		}
	}
	b.Run("v1-websocket", single(native))
	b.Run("jupyter-legacy", single(legacy))
	b.Run("jupyter-v1-subprotocol", single(v1))
	b.Run("side-by-side", func(b *testing.B) {
		var tn, tl, tv []time.Duration
		for b.Loop() {
			for _, x := range []struct {
				rt roundTripper
				d  *[]time.Duration
			}{{native, &tn}, {legacy, &tl}, {v1, &tv}} {
				start := time.Now()
				x.rt.run(b, "x + 1")
				*x.d = append(*x.d, time.Since(start))
			}
		}
		mn, ml, mv := mean(tn), mean(tl), mean(tv)
		b.ReportMetric(mn, "v1-ms/op")
		b.ReportMetric(ml, "jupyter-legacy-ms/op")
		b.ReportMetric(mv, "jupyter-v1-ms/op")
		b.ReportMetric(p50(tn), "v1-p50-ms")
		b.ReportMetric(p50(tl), "jupyter-legacy-p50-ms")
		b.ReportMetric(p50(tv), "jupyter-v1-p50-ms")
		b.ReportMetric(ml/mn, "legacy/v1")
		b.ReportMetric(mv/mn, "v1proto/v1")
	})
}

// kernelIDOf is a session id in the UUID shape of the Jupyter API's
// kernel ids.
func kernelIDOf(s string) string {
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

type roundTripper interface {
	run(b *testing.B, code string)
}

// nativeRT is a lean /v1 WebSocket client: execute, then read until done.
type nativeRT struct {
	c *websocket.Conn
	n int
}

func (r *nativeRT) run(b *testing.B, code string) {
	r.n++
	id := "b" + strconv.Itoa(r.n)
	if err := r.c.WriteJSON(map[string]string{"type": "execute", "id": id, "code": code}); err != nil {
		b.Fatal(err)
	}
	var f struct{ Type, ID, Status string }
	for {
		_, data, err := r.c.ReadMessage()
		if err != nil {
			b.Fatal(err)
		}
		if !bytes.Contains(data, []byte(`"done"`)) {
			continue
		}
		if err := json.Unmarshal(data, &f); err != nil {
			b.Fatal(err)
		}
		if f.Type == "done" && f.ID == id {
			if f.Status != "ok" {
				b.Fatalf("status %s", f.Status)
			}
			return
		}
	}
}

// jupyterRT is a lean Jupyter client: execute_request, then read until the
// execute_reply and the idle status of the request.
type jupyterRT struct {
	c       *websocket.Conn
	v1      bool
	session string
	n       int
}

func (r *jupyterRT) run(b *testing.B, code string) {
	r.n++
	id := r.session + "-" + strconv.Itoa(r.n)
	header, _ := json.Marshal(map[string]string{"msg_id": id, "msg_type": "execute_request", "session": r.session,
		"username": "bench", "version": "5.3", "date": ""})
	content, _ := json.Marshal(map[string]any{"code": code, "silent": false, "store_history": true,
		"user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true})
	var frame []byte
	typ := websocket.TextMessage
	if r.v1 {
		frame, typ = v1Frame("shell", header, content), websocket.BinaryMessage
	} else {
		frame, _ = json.Marshal(map[string]any{"channel": "shell", "header": json.RawMessage(header), "parent_header": map[string]any{},
			"metadata": map[string]any{}, "content": json.RawMessage(content)})
	}
	if err := r.c.WriteMessage(typ, frame); err != nil {
		b.Fatal(err)
	}
	replied, idle := false, false
	for !replied || !idle {
		_, data, err := r.c.ReadMessage()
		if err != nil {
			b.Fatal(err)
		}
		var msgType, state, status, parent string
		if r.v1 {
			off := func(i int) int { return int(binary.LittleEndian.Uint64(data[8*(i+1):])) }
			var h struct {
				MsgType string `json:"msg_type"`
			}
			var p struct {
				MsgID string `json:"msg_id"`
			}
			var c struct {
				ExecutionState string `json:"execution_state"`
				Status         string `json:"status"`
			}
			json.Unmarshal(data[off(1):off(2)], &h)
			json.Unmarshal(data[off(2):off(3)], &p)
			msgType, parent = h.MsgType, p.MsgID
			if msgType == "status" || msgType == "execute_reply" {
				json.Unmarshal(data[off(4):off(5)], &c)
			}
			state, status = c.ExecutionState, c.Status
		} else {
			var m struct {
				Header struct {
					MsgType string `json:"msg_type"`
				} `json:"header"`
				Parent struct {
					MsgID string `json:"msg_id"`
				} `json:"parent_header"`
				Content struct {
					ExecutionState string `json:"execution_state"`
					Status         string `json:"status"`
				} `json:"content"`
			}
			if err := json.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
			msgType, parent, state, status = m.Header.MsgType, m.Parent.MsgID, m.Content.ExecutionState, m.Content.Status
		}
		if parent != id {
			continue
		}
		switch {
		case msgType == "execute_reply":
			if status != "ok" {
				b.Fatalf("reply status %q", status)
			}
			replied = true
		case msgType == "status" && state == "idle":
			idle = true
		}
	}
}

func v1Frame(channel string, header, content []byte) []byte {
	parts := [][]byte{[]byte(channel), header, []byte("{}"), []byte("{}"), content}
	n := len(parts) + 1
	out := make([]byte, 8*(n+1))
	binary.LittleEndian.PutUint64(out, uint64(n))
	off := 8 * (n + 1)
	for i, p := range parts {
		binary.LittleEndian.PutUint64(out[8*(i+1):], uint64(off))
		off += len(p)
	}
	binary.LittleEndian.PutUint64(out[8*n:], uint64(off))
	return append(out, bytes.Join(parts, nil)...)
}

func mean(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum) / float64(len(ds)) / 1e6
}

func p50(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2]) / 1e6
}
