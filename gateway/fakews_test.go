package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// The native WebSocket in the fast tier: a real gateway.Server over a
// Manager on the code-driven fake kernel (sessionstest), its frames
// decoded strictly into package api's types.

// fakeKey is the API key of the fast tier's gateways.
const fakeKey = "fake-gateway-key-0123456789"

// fakeGateway serves a gateway.Server over a sessionstest Manager with
// cfg on a loopback listener until the test ends, and returns its base
// URL and the fake runtime. At cleanup the server shuts down, then the
// Manager closes.
func fakeGateway(t *testing.T, cfg sessions.Config) (string, *sessionstest.Runtime) {
	t.Helper()
	mgr, rt := sessionstest.NewManager(t, cfg)
	srv, err := gateway.New(gateway.Config{APIKeys: []string{fakeKey}}, mgr, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	return "http://" + ln.Addr().String(), rt
}

// createFakeSession creates a session with POST /v1/sessions and returns
// its id.
func createFakeSession(t *testing.T, base string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/sessions", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+fakeKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s api.Session
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != http.StatusCreated || s.ID == "" {
		t.Fatalf("create: HTTP %d, %+v, %v", resp.StatusCode, s, err)
	}
	return s.ID
}

// wireFrame is a frame the gateway wrote: Frame is its api type (a
// value: api.StreamEvent, api.CommEvent, ...), Env its Envelope when it
// is an event of the log (nil for the answers and comm frames), Raw its
// JSON.
type wireFrame struct {
	Frame api.ServerFrame
	Env   *api.Envelope
	Raw   []byte
}

func (f wireFrame) String() string { return string(f.Raw) }

// frameConn is a client of the native WebSocket that decodes every
// frame into the api type of its type field, refusing any field that
// type lacks: the gateway's frames are the wire contract of package api.
type frameConn struct {
	t     *testing.T
	ws    *websocket.Conn
	types map[api.EventType]reflect.Type
}

// dialFrames opens GET /v1/sessions/{id}/ws; the connection is closed at
// the test's end.
func dialFrames(t *testing.T, base, id string) *frameConn {
	t.Helper()
	url := "ws" + strings.TrimPrefix(base, "http") + "/v1/sessions/" + id + "/ws"
	ws, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer " + fakeKey}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { ws.Close() })
	types := map[api.EventType]reflect.Type{}
	for _, f := range api.ServerFrames() {
		types[f.FrameType()] = reflect.TypeOf(f)
	}
	return &frameConn{t: t, ws: ws, types: types}
}

func (c *frameConn) send(f api.ClientFrame) {
	c.t.Helper()
	if err := c.ws.WriteJSON(f); err != nil {
		c.t.Fatalf("send %T: %v", f, err)
	}
}

// next reads and decodes the next frame, failing the test when none
// comes within 30 s or it is not exactly an api frame.
func (c *frameConn) next() wireFrame {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatalf("no frame within 30 s: %v", err)
	}
	var head struct {
		Type api.EventType `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		c.t.Fatalf("frame %s: %v", data, err)
	}
	typ, ok := c.types[head.Type]
	if !ok {
		c.t.Fatalf("frame of unknown type %q: %s", head.Type, data)
	}
	v := reflect.New(typ)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v.Interface()); err != nil {
		c.t.Fatalf("frame %s is no api.%s: %v", data, typ.Name(), err)
	}
	f := wireFrame{Frame: v.Elem().Interface().(api.ServerFrame), Raw: data}
	if env := v.Elem().FieldByName("Envelope"); env.IsValid() {
		e := env.Interface().(api.Envelope)
		f.Env = &e
	}
	return f
}

// untilDone reads frames up to and including the done frame of
// execution id.
func (c *frameConn) untilDone(id string) []wireFrame {
	c.t.Helper()
	var got []wireFrame
	for {
		f := c.next()
		got = append(got, f)
		if d, ok := f.Frame.(api.DoneEvent); ok && d.ID == id {
			return got
		}
	}
}

// indexOf returns the index of the first frame pred matches, or -1.
func indexOf(frames []wireFrame, pred func(api.ServerFrame) bool) int {
	for i, f := range frames {
		if pred(f.Frame) {
			return i
		}
	}
	return -1
}

// TestWebSocketFramesOnTheFake (short tier): the native WebSocket's
// frames, on the fake kernel. A connection opens with the kernel frame
// at the session's last seq; an execute frame gets its stream output,
// then its done frame, ok, every frame of the log at the next seq; a
// comm message the kernel sent before an output is framed before it,
// however slow the side stream; a resume frame replays the log from the
// seq asked, the same frames with the same seqs, and no comm frame.
func TestWebSocketFramesOnTheFake(t *testing.T) {
	t.Parallel()
	base, rt := fakeGateway(t, sessions.Config{})
	id := createFakeSession(t, base)
	c := dialFrames(t, base, id)

	first := c.next()
	if k, ok := first.Frame.(api.KernelEvent); !ok || k.State != string(sessions.StateIdle) {
		t.Fatalf("first frame %s, want the idle kernel", first.Raw)
	}
	last := first.Env.Seq
	logged := map[int64][]byte{} // the log's frames seen, by seq
	inOrder := func(frames []wireFrame) {
		t.Helper()
		for _, f := range frames {
			if f.Env == nil {
				continue
			}
			if f.Env.Seq != last+1 {
				t.Fatalf("frame %s after seq %d: the log's frames go one seq at a time", f.Raw, last)
			}
			last = f.Env.Seq
			logged[last] = f.Raw
		}
	}

	c.send(api.ExecuteFrame{Type: api.FrameExecute, ID: "hi", Code: "print:hi"})
	frames := c.untilDone("hi")
	inOrder(frames)
	stream := indexOf(frames, func(f api.ServerFrame) bool {
		s, ok := f.(api.StreamEvent)
		return ok && s.ID == "hi" && s.Name == "stdout" && s.Text == "hi"
	})
	done := frames[len(frames)-1].Frame.(api.DoneEvent)
	if stream < 0 || done.Status != "ok" {
		t.Fatalf("print:hi framed %s", frames)
	}
	hiSeq := frames[stream].Env.Seq

	// The side stream slow to deliver: the comm frame still comes first.
	rt.Kernels()[0].SetSideDelay(20 * time.Millisecond)
	c.send(api.ExecuteFrame{Type: api.FrameExecute, ID: "side", Code: "side:w1"})
	frames = c.untilDone("side")
	inOrder(frames)
	comm := indexOf(frames, func(f api.ServerFrame) bool {
		m, ok := f.(api.CommEvent)
		return ok && m.Msg.Header.MsgType == "comm_msg" && strings.Contains(string(m.Msg.Content), `"n":"w1"`)
	})
	out := indexOf(frames, func(f api.ServerFrame) bool {
		s, ok := f.(api.StreamEvent)
		return ok && s.ID == "side" && s.Text == "w1"
	})
	if comm < 0 || out < 0 || comm > out || frames[len(frames)-1].Frame.(api.DoneEvent).Status != "ok" {
		t.Fatalf("side:w1 framed (comm at %d, output at %d) %s", comm, out, frames)
	}

	c.send(api.ResumeFrame{Type: api.FrameResume, Since: hiSeq - 1})
	// Frames already on their way come first (new seqs); the replay
	// begins at the first seq seen before, which must be hiSeq.
	seen := last
	var f wireFrame
	for {
		f = c.next()
		if f.Env != nil && f.Env.Seq <= seen {
			break
		}
		if f.Env != nil {
			inOrder([]wireFrame{f})
			seen = last
		}
	}
	for seq := hiSeq; seq <= seen; seq++ {
		if f.Env == nil {
			t.Fatalf("a frame of no seq (%s) in the replay: comm frames are not in the log", f.Raw)
		}
		if f.Env.Seq != seq || !bytes.Equal(f.Raw, logged[seq]) {
			t.Fatalf("replay from %d: at seq %d got %s, want %s", hiSeq-1, seq, f.Raw, logged[seq])
		}
		if seq < seen {
			f = c.next()
		}
	}
}
