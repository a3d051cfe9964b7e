package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
)

// Comms (widgets) on the native WebSocket, on real kernels with ipywidgets
// 8: the kernel's comm traffic arrives as comm frames, in the kernel's
// order with the events; a client's comm frames reach the kernel; and the
// abuse a client or a kernel can try costs the gateway nothing beyond the
// limits.

// commConn is a /v1 WebSocket read through the Go client, whose decoding
// (api.Event) the frames must fit.
type commConn struct {
	t    *testing.T
	conn *glclient.Conn
}

func (e *env) commConn(key, id string) *commConn {
	e.t.Helper()
	conn, err := e.client(key).Connect(context.Background(), id, glclient.ConnectOptions{})
	if err != nil {
		e.t.Fatalf("ws dial: %v", err)
	}
	e.t.Cleanup(func() { conn.Close() })
	return &commConn{t: e.t, conn: conn}
}

func (c *commConn) send(v map[string]any) {
	c.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.SendRaw(context.Background(), data); err != nil {
		c.t.Fatal(err)
	}
}

// until reads frames until pred matches one, returning every frame read.
func (c *commConn) until(what string, pred func(api.Event) bool) []api.Event {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var got []api.Event
	for {
		ev, err := c.conn.Next(ctx)
		if err != nil {
			c.t.Fatalf("waiting for %s after %d frames: %v", what, len(got), err)
		}
		got = append(got, ev)
		if pred(ev) {
			return got
		}
	}
}

// answer reads until the comm_sent or rejected frame of id.
func (c *commConn) answer(id string) api.Event {
	c.t.Helper()
	got := c.until("the answer to "+id, func(ev api.Event) bool {
		return (ev.Type == api.EventCommSent || ev.Type == api.EventRejected) && ev.ID == id
	})
	return got[len(got)-1]
}

// comm sends a comm frame and returns its answer.
func (c *commConn) comm(id, msgType string, content map[string]any, buffers ...[]byte) api.Event {
	c.t.Helper()
	frame := map[string]any{"type": "comm", "id": id, "msg_type": msgType, "content": content, "metadata": map[string]any{}}
	if len(buffers) > 0 {
		var b64 []string
		for _, b := range buffers {
			b64 = append(b64, base64.StdEncoding.EncodeToString(b))
		}
		frame["buffers"] = b64
	}
	c.send(frame)
	return c.answer(id)
}

func commContent(ev api.Event) map[string]any {
	var m map[string]any
	if ev.Msg != nil {
		json.Unmarshal(ev.Msg.Content, &m)
	}
	return m
}

// isComm matches the comm frame of msgType whose parent is parent.
func isComm(msgType, parent string) func(api.Event) bool {
	return func(ev api.Event) bool {
		return ev.Type == api.EventComm && ev.Msg.Header.MsgType == msgType && ev.Msg.ParentHeader.MsgID == parent
	}
}

func idleOf(parent string) func(api.Event) bool {
	return func(ev api.Event) bool {
		return isComm("status", parent)(ev) && commContent(ev)["execution_state"] == "idle"
	}
}

func TestCommsNativeWebSocket(t *testing.T) {
	for name, rt := range runtimes() {
		if name == "docker-runsc" {
			continue // nothing of it depends on the OCI runtime
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			s := e.create(keyA, nil)
			nativeWidgets(t, e, s.ID)
		})
	}
}

// nativeWidgets: the widgets' comm_opens arrive as comm frames naming the
// execution as their parent, before the display events that show them;
// the client's slider update is the kernel's value; a click's output
// names the click's msg_id; buffers go both ways; comm_info lists the
// widgets; malformed comm frames are rejected with bad_comm and change
// nothing.
func nativeWidgets(t *testing.T, e *env, id string) {
	c := e.commConn(keyA, id)
	c.send(map[string]any{"type": "execute", "id": "w", "code": `import ipywidgets as w
s = w.IntSlider(value=3)
b = w.Button(description='go')
b.on_click(lambda _: print('clicked', s.value))
img = w.Image(value=b'\x89PNG-before', format='png')
display(s, b, img)`})
	all := c.until("the widget cell", func(ev api.Event) bool { return ev.Type == api.EventDone && ev.ID == "w" })
	if all[len(all)-1].Status != "ok" {
		t.Fatalf("the widget cell: %+v", all)
	}
	models, at := map[string]string{}, map[string]int{}
	for i, ev := range all {
		if ev.Type != api.EventComm || ev.Msg.Header.MsgType != "comm_open" {
			continue
		}
		if ev.Msg.ParentHeader.MsgID != "w" || ev.Seq != 0 {
			t.Fatalf("comm_open %+v: want the execution as parent, no seq", ev.Msg)
		}
		content := commContent(ev)
		model, _ := content["data"].(map[string]any)["state"].(map[string]any)["_model_name"].(string)
		models[model] = content["comm_id"].(string)
		at[content["comm_id"].(string)] = i
		if model == "ImageModel" && (len(ev.Msg.Buffers) != 1 || !bytes.Equal(ev.Msg.Buffers[0], []byte("\x89PNG-before"))) {
			t.Fatalf("the image's comm_open carries %q", ev.Msg.Buffers)
		}
	}
	slider, button, image := models["IntSliderModel"], models["ButtonModel"], models["ImageModel"]
	if slider == "" || button == "" || image == "" {
		t.Fatalf("comm_opens %v", models)
	}
	shown := 0
	for i, ev := range all {
		if ev.Type != api.EventDisplay {
			continue
		}
		var view struct {
			ModelID string `json:"model_id"`
		}
		raw, _ := ev.Data.Decode()
		json.Unmarshal(raw["application/vnd.jupyter.widget-view+json"], &view)
		if open, ok := at[view.ModelID]; !ok || open > i {
			t.Fatalf("the display of %q came before its comm_open", view.ModelID)
		}
		shown++
	}
	if shown != 3 {
		t.Fatalf("%d widget displays in %+v", shown, all)
	}

	sent := c.comm("u1", "comm_msg", map[string]any{"comm_id": slider, "data": map[string]any{"method": "update", "state": map[string]any{"value": 7}, "buffer_paths": []any{}}})
	if sent.Type != api.EventCommSent || sent.MsgID == "" {
		t.Fatalf("the update: %+v", sent)
	}
	got := c.until("the update's idle", idleOf(sent.MsgID))
	busy := false
	for _, ev := range got {
		busy = busy || (isComm("status", sent.MsgID)(ev) && commContent(ev)["execution_state"] == "busy")
	}
	if !busy {
		t.Fatalf("no busy for the update: %+v", got)
	}
	if x := e.exec(keyA, id, "s.value", 0); string(x.Result) != `{"text/plain":"7"}` {
		t.Fatalf("the slider after the client's update: %s", x.Result)
	}

	click := c.comm("c1", "comm_msg", map[string]any{"comm_id": button, "data": map[string]any{"method": "custom", "content": map[string]any{"event": "click"}}})
	got = c.until("the click's output", isComm("stream", click.MsgID))
	if text := commContent(got[len(got)-1])["text"]; text != "clicked 7\n" {
		t.Fatalf("click output %q", text)
	}

	png := []byte("\x89PNG\r\n\x1a\n-native\x00\xff")
	upd := c.comm("i1", "comm_msg", map[string]any{"comm_id": image, "data": map[string]any{"method": "update", "state": map[string]any{}, "buffer_paths": [][]string{{"value"}}}}, png)
	c.until("the image update's idle", idleOf(upd.MsgID))
	if x := e.exec(keyA, id, "bytes(img.value) == b'\\x89PNG\\r\\n\\x1a\\n-native\\x00\\xff'", 0); string(x.Result) != `{"text/plain":"True"}` {
		t.Fatalf("the image after the client's buffer: %s", x.Result)
	}

	c.send(map[string]any{"type": "comm_info", "id": "ci", "target_name": "jupyter.widget"})
	got = c.until("comm_info_reply", func(ev api.Event) bool { return ev.Type == api.EventCommInfoReply && ev.ID == "ci" })
	comms := got[len(got)-1].Comms
	for _, id := range []string{slider, button, image} {
		if comms[id].TargetName != "jupyter.widget" {
			t.Fatalf("comm_info %v lacks %s", comms, id)
		}
	}

	// Malformed comm frames: rejected, nothing reaches the kernel.
	for i, f := range []map[string]any{
		{"msg_type": "execute_request", "content": map[string]any{"comm_id": slider}},
		{"msg_type": "comm_msg"},
		{"msg_type": "comm_msg", "content": 5},
		{"msg_type": "comm_msg", "content": map[string]any{"comm_id": 5}},
		{"msg_type": "comm_msg", "content": map[string]any{"comm_id": strings.Repeat("x", 200)}},
		{"msg_type": "comm_msg", "content": map[string]any{"comm_id": "no-such-comm", "data": map[string]any{}}},
		{"msg_type": "comm_msg", "content": map[string]any{"comm_id": slider, "data": "not an object"}},
		{"msg_type": "comm_msg", "content": map[string]any{"comm_id": slider, "data": map[string]any{}}, "buffers": []string{"not base64!"}},
		{"msg_type": "comm_msg", "content": map[string]any{"comm_id": slider, "data": map[string]any{}}, "buffers": make([]string, 17)},
		{"msg_type": "comm_msg", "content": map[string]any{"comm_id": slider, "data": map[string]any{}}, "metadata": []int{1}},
		{"msg_type": "comm_open", "content": map[string]any{"comm_id": "new"}},
		{"msg_type": "comm_open", "content": map[string]any{"comm_id": slider, "target_name": "jupyter.widget"}},
	} {
		f["type"], f["id"] = "comm", fmt.Sprint("bad", i)
		c.send(f)
		if ev := c.answer(fmt.Sprint("bad", i)); ev.Type != api.EventRejected || ev.Code != "bad_comm" || ev.Message == "" {
			t.Fatalf("malformed comm frame %v: %+v", f, ev)
		}
	}
	if x := e.exec(keyA, id, "s.value", 0); string(x.Result) != `{"text/plain":"7"}` {
		t.Fatalf("the slider after malformed frames: %s", x.Result)
	}
}

// TestCommsFrameID: a comm frame's id is the msg_id its message goes to
// the kernel with (comm_sent says so), so that the client knows the
// parent of the handler's busy, output and idle before they can arrive
// (ipywidgets matches its messages' idle and echoes by the msg_id
// comm.send returned); an id that another message has (the same
// client's earlier frame, another connection's, the running
// execution's), an overlong one or none gets a new msg_id.
func TestCommsFrameID(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	c := e.commConn(keyA, s.ID)
	c.send(map[string]any{"type": "execute", "id": "w", "code": "import ipywidgets as w\nclicks = 0\ndef on(_):\n    global clicks\n    clicks += 1\n    print('clicked', clicks)\nb = w.Button()\nb.on_click(on)\nb"})
	var button string
	all := c.until("the button's cell", func(ev api.Event) bool {
		if ev.Type == api.EventComm && ev.Msg.Header.MsgType == "comm_open" {
			button, _ = commContent(ev)["comm_id"].(string)
		}
		return ev.Type == api.EventDone && ev.ID == "w"
	})
	if all[len(all)-1].Status != "ok" || button == "" {
		t.Fatalf("the button's cell: %+v", all)
	}
	clickContent := map[string]any{"comm_id": button, "data": map[string]any{"method": "custom", "content": map[string]any{"event": "click"}}}
	// click sends a click with frame id and returns the msg_id it went
	// with, once the handler's busy, output and idle all named it.
	click := func(c *commConn, id string, n int) string {
		t.Helper()
		sent := c.comm(id, "comm_msg", clickContent)
		if sent.Type != api.EventCommSent || sent.MsgID == "" {
			t.Fatalf("click %q: %+v", id, sent)
		}
		got := c.until("the idle of click "+id, idleOf(sent.MsgID))
		var busy, out bool
		for _, ev := range got {
			busy = busy || (isComm("status", sent.MsgID)(ev) && commContent(ev)["execution_state"] == "busy")
			out = out || (isComm("stream", sent.MsgID)(ev) && commContent(ev)["text"] == fmt.Sprintf("clicked %d\n", n))
		}
		if !busy || !out {
			t.Fatalf("click %q (msg_id %q): busy %v, output %v in %+v", id, sent.MsgID, busy, out, got)
		}
		return sent.MsgID
	}
	if got := click(c, "page-click-1", 1); got != "page-click-1" {
		t.Fatalf("the click went as %q, want the frame's id", got)
	}
	if got := click(c, "page-click-1", 2); got == "page-click-1" {
		t.Fatalf("a second frame of the same id went with it again")
	}
	other := e.commConn(keyA, s.ID)
	if got := click(other, "page-click-2", 3); got != "page-click-2" {
		t.Fatalf("the other connection's click went as %q, want its frame's id", got)
	}
	if got := click(c, "page-click-2", 4); got == "page-click-2" {
		t.Fatalf("a frame with another connection's id went with it")
	}
	long := strings.Repeat("x", 129)
	if got := click(c, long, 5); got == long {
		t.Fatalf("a frame id of 129 bytes went as the msg_id")
	}
	if got := click(c, "", 6); got == "" {
		t.Fatalf("a frame without an id went without a msg_id")
	}

	// The running execution's id: the click's output is the click's, not
	// the execution's (which waits in input() meanwhile).
	c.send(map[string]any{"type": "execute", "id": "waiting", "code": "input('go?'); print('done')"})
	c.until("the input request", func(ev api.Event) bool { return ev.Type == api.EventInputRequest && ev.ID == "waiting" })
	sent := c.comm("waiting", "comm_msg", clickContent)
	if sent.Type != api.EventCommSent || sent.MsgID == "" || sent.MsgID == "waiting" {
		t.Fatalf("a click with the running execution's id: %+v", sent)
	}
	c.send(map[string]any{"type": "input_reply", "id": "waiting", "value": "yes"})
	// The kernel handles the click once the cell ends; the two streams
	// (the execution's events, the click's comm frames) each keep their
	// order, not their order with each other (docs/api.md).
	var ended, clicked bool
	for _, ev := range c.until("the execution's end and the click's output", func(ev api.Event) bool {
		ended = ended || (ev.Type == api.EventDone && ev.ID == "waiting")
		clicked = clicked || (isComm("stream", sent.MsgID)(ev) && commContent(ev)["text"] == "clicked 7\n")
		return ended && clicked
	}) {
		if ev.Type == api.EventStream && strings.Contains(ev.Text, "clicked") {
			t.Fatalf("the click's output went to the execution: %+v", ev)
		}
	}

	// A burst of clicks sent without waiting: each comm_sent comes before
	// every frame of what the kernel sent while handling its message
	// (the client learns the msg_id first), whatever the load.
	const burst = 30
	for i := range burst {
		c.send(map[string]any{"type": "comm", "id": fmt.Sprint("burst-", i), "msg_type": "comm_msg", "metadata": map[string]any{}, "content": clickContent})
	}
	answered := map[string]bool{} // msg ids whose comm_sent came
	idles := 0
	c.until("the burst's idles", func(ev api.Event) bool {
		switch {
		case ev.Type == api.EventCommSent:
			answered[ev.MsgID] = true
		case ev.Type == api.EventRejected:
			t.Fatalf("a click of the burst was refused: %+v", ev)
		case ev.Type == api.EventComm && strings.HasPrefix(ev.Msg.ParentHeader.MsgID, "burst-") && !answered[ev.Msg.ParentHeader.MsgID]:
			t.Fatalf("%s of %q came before its comm_sent", ev.Msg.Header.MsgType, ev.Msg.ParentHeader.MsgID)
		case ev.Type == api.EventComm && strings.HasPrefix(ev.Msg.ParentHeader.MsgID, "burst-") && commContent(ev)["execution_state"] == "idle":
			idles++
		}
		return idles == burst
	})
}

// TestCommsControlComm: the restore of a reloaded page (ipywidgets 8's
// control comm, which the web notebook's widget manager opens): the
// client's comm_open to jupyter.widget.control and its request_states
// reach the kernel, whose update_states (every widget's state) comes back
// on that comm, naming the request as its parent; the comm is the
// client's own (another connection cannot message it) and closes.
func TestCommsControlComm(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	c := e.commConn(keyA, s.ID)
	c.send(map[string]any{"type": "execute", "id": "w", "code": "import ipywidgets as w\ns = w.IntSlider(value=4)"})
	var slider string
	c.until("the slider", func(ev api.Event) bool {
		if ev.Type == api.EventComm && ev.Msg.Header.MsgType == "comm_open" && strings.Contains(string(ev.Msg.Content), "IntSliderModel") {
			slider = commContent(ev)["comm_id"].(string)
		}
		return ev.Type == api.EventDone && ev.ID == "w"
	})
	c.send(map[string]any{"type": "comm", "id": "ctl-open", "msg_type": "comm_open", "metadata": map[string]any{"version": "1.0.0"},
		"content": map[string]any{"comm_id": "ctl", "target_name": "jupyter.widget.control", "data": map[string]any{}}})
	if ev := c.answer("ctl-open"); ev.Type != api.EventCommSent {
		t.Fatalf("the control comm_open: %+v", ev)
	}
	if ev := c.comm("ctl-req", "comm_msg", map[string]any{"comm_id": "ctl", "data": map[string]any{"method": "request_states"}}); ev.Type != api.EventCommSent || ev.MsgID != "ctl-req" {
		t.Fatalf("request_states: %+v", ev)
	}
	got := c.until("update_states", func(ev api.Event) bool {
		return ev.Type == api.EventComm && ev.Msg.Header.MsgType == "comm_msg" && commContent(ev)["comm_id"] == "ctl"
	})
	reply := got[len(got)-1]
	var data struct {
		Method string `json:"method"`
		States map[string]struct {
			ModelName string         `json:"model_name"`
			State     map[string]any `json:"state"`
		} `json:"states"`
	}
	raw, _ := json.Marshal(commContent(reply)["data"])
	if err := json.Unmarshal(raw, &data); err != nil || data.Method != "update_states" || reply.Msg.ParentHeader.MsgID != "ctl-req" ||
		data.States[slider].ModelName != "IntSliderModel" || data.States[slider].State["value"] != float64(4) {
		t.Fatalf("the control comm's answer (parent %q): %.500s", reply.Msg.ParentHeader.MsgID, raw)
	}
	other := e.commConn(keyA, s.ID)
	if ev := other.comm("x", "comm_msg", map[string]any{"comm_id": "ctl", "data": map[string]any{"method": "request_states"}}); ev.Type != api.EventRejected || ev.Code != "comm_not_owned" {
		t.Fatalf("another connection's message to the control comm: %+v", ev)
	}
	if ev := c.comm("ctl-close", "comm_close", map[string]any{"comm_id": "ctl", "data": map[string]any{}}); ev.Type != api.EventCommSent {
		t.Fatalf("closing the control comm: %+v", ev)
	}
}

// outputWidgetCell shows 20 images inside an Output widget and one after
// it: each goes to the client between the comm_msg that sets the Output
// widget's msg_id to the cell's and the one that resets it (the order a
// page needs to put them into the widget), the last after the reset.
const outputWidgetCell = `import ipywidgets as w
out = w.Output()
for i in range(20):
    with out:
        display({'image/png': 'QUJD' * 20000, 'text/plain': 'inside %d' % i}, raw=True)
display({'text/plain': 'outside'}, raw=True)`

// capturedBy returns the msg_id an Output widget's update sets (ok false
// for other messages).
func capturedBy(msgType string, content map[string]any) (string, bool) {
	data, _ := content["data"].(map[string]any)
	state, _ := data["state"].(map[string]any)
	id, ok := state["msg_id"].(string)
	return id, ok && msgType == "comm_msg" && data["method"] == "update"
}

// TestCommsClosedWithTheirConnection: the comms a connection opened are
// closed in the kernel when it ends (nobody else may use them, and each
// reloaded page would otherwise leave its widget control comm behind);
// another connection's comm and the kernel's stay open.
func TestCommsClosedWithTheirConnection(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	if x := e.exec(keyA, s.ID, "closed = []\nget_ipython().kernel.comm_manager.register_target('keep', lambda comm, msg: comm.on_close(lambda m: closed.append(comm.comm_id)))", 0); x.Status != "ok" {
		t.Fatalf("register: %+v", x)
	}
	gone, stays := e.commConn(keyA, s.ID), e.commConn(keyA, s.ID)
	for _, c := range []struct {
		conn *commConn
		id   string
	}{{gone, "gone-1"}, {gone, "gone-2"}, {stays, "stays"}} {
		if ev := c.conn.comm(c.id, "comm_open", map[string]any{"comm_id": c.id, "target_name": "keep", "data": map[string]any{}}); ev.Type != api.EventCommSent {
			t.Fatalf("open %s: %+v", c.id, ev)
		}
	}
	gone.conn.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		x := e.exec(keyA, s.ID, "sorted(closed)", 0)
		if string(x.Result) == `{"text/plain":"['gone-1', 'gone-2']"}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kernel closed %s", x.Result)
		}
		time.Sleep(50 * time.Millisecond)
	}
	id := "ci"
	stays.send(map[string]any{"type": "comm_info", "id": id, "target_name": "keep"})
	got := stays.until("comm_info_reply", func(ev api.Event) bool { return ev.Type == api.EventCommInfoReply && ev.ID == id })
	if comms := got[len(got)-1].Comms; len(comms) != 1 || comms["stays"].TargetName != "keep" {
		t.Fatalf("open comms after the connection went: %v", comms)
	}
	if ev := stays.comm("m", "comm_msg", map[string]any{"comm_id": "stays", "data": map[string]any{}}); ev.Type != api.EventCommSent {
		t.Fatalf("the other connection's comm: %+v", ev)
	}
}

// TestCommsOutputWidgetOrder: a cell's comm messages and its output reach
// a /v1 client in the kernel's order, so that what an Output widget
// captures comes while its msg_id is the cell's (it went wrong for about
// one display in ten when the comm messages took the side stream alone).
func TestCommsOutputWidgetOrder(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	c := e.commConn(keyA, s.ID)
	for run := range 3 {
		id := fmt.Sprint("cell", run)
		c.send(map[string]any{"type": "execute", "id": id, "code": outputWidgetCell})
		got := c.until("the cell", func(ev api.Event) bool { return ev.Type == api.EventDone && ev.ID == id })
		if got[len(got)-1].Status != "ok" {
			t.Fatalf("the cell: %+v", got[len(got)-1])
		}
		capture, inside, outside := "", 0, 0
		for _, ev := range got {
			switch ev.Type {
			case api.EventComm:
				var content map[string]any
				json.Unmarshal(ev.Msg.Content, &content)
				if msgID, ok := capturedBy(ev.Msg.Header.MsgType, content); ok {
					capture = msgID
				}
			case api.EventDisplay:
				data, _ := ev.Data.Decode()
				var text string
				json.Unmarshal(data["text/plain"], &text)
				switch {
				case strings.HasPrefix(text, "inside") && capture == id:
					inside++
				case text == "outside" && capture == "":
					outside++
				default:
					t.Fatalf("run %d: %q came while the Output widget's msg_id was %q", run, text, capture)
				}
			}
		}
		if inside != 20 || outside != 1 {
			t.Fatalf("run %d: %d displays inside the Output widget, %d outside, want 20 and 1", run, inside, outside)
		}
	}
}

// TestCommsAbuse: a client's comm_opens past the limit are refused, a
// comm_msg flood past the rate is refused while the gateway serves every
// session, and a kernel flooding comm messages from a thread holds up
// neither its session's executions nor another session.
func TestCommsAbuse(t *testing.T) {
	t.Run("open comms limit", func(t *testing.T) { commLimit(t) })
	t.Run("comm_msg flood", func(t *testing.T) { commFlood(t) })
	t.Run("kernel floods from a thread", func(t *testing.T) { kernelFlood(t) })
	t.Run("kernel opens 100,000 comms", func(t *testing.T) { kernelOpensMany(t) })
	t.Run("comms to a busy kernel", func(t *testing.T) { commBacklog(t) })
}

// commBacklog: while a cell runs the kernel reads no shell; a client's
// comm messages past sessions.MaxCommBacklog are refused (rate_limited),
// not sent into a queue that would block the gateway's send to the
// kernel (the client's reader, and every other send on shell, behind
// it). Once the cell ends and the kernel has handled them, comm messages
// go again.
func commBacklog(t *testing.T) {
	// The long cell must outlast the sends, however slow a loaded machine
	// makes them (CI once took over the default 60 s timeout): it runs
	// until the test interrupts it, within the test's 5 minutes.
	e := newEnv(t, localRuntime(t), sessions.Config{CommRate: -1, ExecTimeout: 6 * time.Minute})
	s := e.create(keyA, nil)
	c := e.commConn(keyA, s.ID)
	c.send(map[string]any{"type": "execute", "id": "w", "code": "import ipywidgets as w\nt = w.Text()"})
	var text string
	c.until("the widget", func(ev api.Event) bool {
		if ev.Type == api.EventComm && ev.Msg.Header.MsgType == "comm_open" && strings.Contains(string(ev.Msg.Content), "TextModel") {
			text = commContent(ev)["comm_id"].(string)
		}
		return ev.Type == api.EventDone && ev.ID == "w"
	})
	c.send(map[string]any{"type": "execute", "id": "long", "code": "import time\ntime.sleep(600)"})
	c.until("the long cell's start", func(ev api.Event) bool { return ev.Type == api.EventKernel && ev.State == "busy" })
	// Past the kernel's shell queue (1000 messages) and the socket's
	// buffers: without the bound, the send of one of them blocks until
	// the cell ends.
	const total = 1500
	value := strings.Repeat("v", 64<<10)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	go func() {
		for j := range total {
			frame, _ := json.Marshal(map[string]any{"type": "comm", "id": fmt.Sprint(j), "msg_type": "comm_msg",
				"content": map[string]any{"comm_id": text, "data": map[string]any{"method": "update", "state": map[string]any{"value": value}, "buffer_paths": []any{}}}})
			if c.conn.SendRaw(ctx, frame) != nil {
				return
			}
		}
	}()
	sent, limited, last := 0, 0, ""
	for sent+limited < total {
		ev, err := c.conn.Next(ctx)
		if err != nil {
			t.Fatalf("after %d sent and %d refused: %v", sent, limited, err)
		}
		switch {
		case ev.Type == api.EventCommSent:
			sent++
			last = ev.MsgID
		case ev.Type == api.EventRejected && ev.Code == "rate_limited":
			limited++
		case ev.Type == api.EventRejected:
			t.Fatalf("rejected: %+v", ev)
		case ev.Type == api.EventDone && ev.ID == "long":
			t.Fatalf("the cell ended (%s) with %d comm messages sent and %d refused: the sends waited for it", ev.Status, sent, limited)
		}
	}
	if sent != sessions.MaxCommBacklog || limited != total-sent {
		t.Fatalf("%d sent and %d refused while the cell ran", sent, limited)
	}
	c.send(map[string]any{"type": "interrupt"})
	c.until("the long cell's end", func(ev api.Event) bool { return ev.Type == api.EventDone && ev.ID == "long" })
	c.until("the last update's idle", idleOf(last))
	if ev := c.comm("after", "comm_msg", map[string]any{"comm_id": text, "data": map[string]any{"method": "update", "state": map[string]any{"value": "after"}, "buffer_paths": []any{}}}); ev.Type != api.EventCommSent {
		t.Fatalf("a comm message once the kernel caught up: %+v", ev)
	}
	if x := e.exec(keyA, s.ID, "t.value", 0); string(x.Result) != `{"text/plain":"'after'"}` {
		t.Fatalf("the text after the backlog: %s", x.Result)
	}
}

// kernelOpensMany: a cell opens 100,000 comms; the session tracks at most
// 10,000 (the rest are relayed, or dropped where the side stream is
// full), a client connected meanwhile stays connected, and the session
// runs on.
func kernelOpensMany(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	c := e.commConn(keyA, s.ID)
	c.send(map[string]any{"type": "execute", "id": "many", "timeout_s": 600,
		"code": "from ipykernel.comm import Comm\nmany = [Comm(target_name='many', data={}) for _ in range(100000)]\nlen(many)"})
	opens := 0
	got := c.until("the cell", func(ev api.Event) bool {
		if ev.Type == api.EventComm && ev.Msg.Header.MsgType == "comm_open" {
			opens++
		}
		return ev.Type == api.EventDone && ev.ID == "many"
	})
	if got[len(got)-1].Status != "ok" || opens == 0 {
		t.Fatalf("the cell: %+v after %d comm_opens", got[len(got)-1], opens)
	}
	t.Logf("%d of the 100,000 comm_opens reached the client", opens)
	sum := sha256.Sum256([]byte(keyA))
	sess, err := e.mgr.Get(hex.EncodeToString(sum[:8]), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := sess.First().Comms().OpenComms(); n == 0 || n > 10000 {
		t.Fatalf("the session tracks %d comms", n)
	}
	c.send(map[string]any{"type": "execute", "id": "after", "code": "1 + 1"})
	got = c.until("the next execution", func(ev api.Event) bool { return ev.Type == api.EventDone && ev.ID == "after" })
	if got[len(got)-1].Status != "ok" {
		t.Fatalf("after the comms: %+v", got[len(got)-1])
	}
}

// commLimit: 10,001 comm_opens from 8 connections: exactly 10,000 are
// sent (and open in the kernel), one is refused with comm_limit; once
// one is closed, another opens. The connections send as fast as they
// can, faster than the kernel handles them: what is refused as
// rate_limited (past sessions.MaxCommBacklog unhandled) is sent again.
func commLimit(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{CommRate: -1})
	s := e.create(keyA, nil)
	if x := e.exec(keyA, s.ID, "get_ipython().kernel.comm_manager.register_target('keep', lambda comm, msg: None)", 0); x.Status != "ok" {
		t.Fatalf("register: %+v", x)
	}
	const conns, total = 8, 10001
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	var opened []string // comm ids of the first connection's
	cs := make([]*commConn, conns)
	for i := range cs {
		cs[i] = e.commConn(keyA, s.ID)
	}
	for i, c := range cs {
		n := total / conns
		if i < total%conns {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			todo := make(chan int, n) // what to send (again)
			for j := range n {
				todo <- j
			}
			defer close(todo)
			go func() {
				for j := range todo {
					frame, _ := json.Marshal(map[string]any{"type": "comm", "id": fmt.Sprint(j), "msg_type": "comm_open",
						"content": map[string]any{"comm_id": fmt.Sprintf("c%d-%d", i, j), "target_name": "keep", "data": map[string]any{}}})
					if c.conn.SendRaw(ctx, frame) != nil {
						return
					}
				}
			}()
			for answered := 0; answered < n; {
				ev, err := c.conn.Next(ctx)
				if err != nil {
					t.Errorf("connection %d after %d answers: %v", i, answered, err)
					return
				}
				if ev.Type != api.EventCommSent && ev.Type != api.EventRejected {
					continue
				}
				if ev.Code == "rate_limited" { // the kernel is behind: again
					j, _ := strconv.Atoi(ev.ID)
					todo <- j
					continue
				}
				answered++
				mu.Lock()
				code := ev.Code
				if ev.Type == api.EventCommSent {
					code = "sent"
					if i == 0 {
						opened = append(opened, ev.ID)
					}
				}
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if codes["sent"] != 10000 || codes["comm_limit"] != 1 || len(codes) != 2 {
		t.Fatalf("answers %v: want 10000 sent and one comm_limit", codes)
	}
	if x := e.exec(keyA, s.ID, "len(get_ipython().kernel.comm_manager.comms)", 0); string(x.Result) != `{"text/plain":"10000"}` {
		t.Fatalf("comms open in the kernel: %s", x.Result)
	}
	c := cs[0]
	if ev := c.comm("more", "comm_open", map[string]any{"comm_id": "more", "target_name": "keep", "data": map[string]any{}}); ev.Code != "comm_limit" {
		t.Fatalf("a comm past the limit: %+v", ev)
	}
	if ev := c.comm("close", "comm_close", map[string]any{"comm_id": "c0-" + opened[0], "data": map[string]any{}}); ev.Type != api.EventCommSent {
		t.Fatalf("closing one: %+v", ev)
	}
	if ev := c.comm("again", "comm_open", map[string]any{"comm_id": "more", "target_name": "keep", "data": map[string]any{}}); ev.Type != api.EventCommSent {
		t.Fatalf("a comm after one closed: %+v", ev)
	}
}

// commFlood: four connections send comm_msgs to a widget as fast as the
// gateway reads them (200 frames a second each): past the session's 200
// a second (bursts of 400) they are refused with rate_limited, while the
// session and another one run executions and the gateway answers.
func commFlood(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	other := e.create(keyB, nil)
	c := e.commConn(keyA, s.ID)
	c.send(map[string]any{"type": "execute", "id": "w", "code": "import ipywidgets as w\ns = w.IntSlider()"})
	var slider string
	c.until("the slider", func(ev api.Event) bool {
		if ev.Type == api.EventComm && ev.Msg.Header.MsgType == "comm_open" && strings.Contains(string(ev.Msg.Content), "IntSliderModel") {
			slider = commContent(ev)["comm_id"].(string)
		}
		return ev.Type == api.EventDone && ev.ID == "w"
	})
	const conns, each = 4, 500
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	start := time.Now()
	for i := range conns {
		fc := e.commConn(keyA, s.ID)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			go func() {
				for j := range each {
					frame, _ := json.Marshal(map[string]any{"type": "comm", "id": fmt.Sprint(j), "msg_type": "comm_msg",
						"content": map[string]any{"comm_id": slider, "data": map[string]any{"method": "update", "state": map[string]any{"value": i*each + j}, "buffer_paths": []any{}}}})
					if fc.conn.SendRaw(ctx, frame) != nil {
						return
					}
				}
			}()
			for answered := 0; answered < each; {
				ev, err := fc.conn.Next(ctx)
				if err != nil {
					t.Errorf("flooding connection %d: %v", i, err)
					return
				}
				if ev.Type == api.EventCommSent || ev.Type == api.EventRejected {
					answered++
					mu.Lock()
					codes[string(ev.Type)+":"+ev.Code]++
					mu.Unlock()
				}
			}
		}()
	}
	// Meanwhile the gateway serves both sessions.
	for i := range 3 {
		for _, id := range []string{s.ID, other.ID} {
			key := keyA
			if id == other.ID {
				key = keyB
			}
			if x := e.exec(key, id, fmt.Sprint(i, "+ 1"), 0); x.Status != "ok" {
				t.Fatalf("an execution during the flood: %+v", x)
			}
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	sent, limited := codes["comm_sent:"], codes["rejected:rate_limited"]
	if sent+limited != conns*each || limited == 0 || sent > 400+int(200*elapsed.Seconds())+200 {
		t.Fatalf("in %v: %v", elapsed, codes)
	}
	if x := e.exec(keyA, s.ID, "isinstance(s.value, int)", 0); string(x.Result) != `{"text/plain":"True"}` {
		t.Fatalf("after the flood: %+v", x)
	}
}

// kernelFlood: a thread of the kernel sends comm messages as fast as it
// can; the session's executions complete meanwhile (their output may be
// lost to the flood in the kernel's own socket), a client gets the
// flood's comm frames, and another session is not affected.
func kernelFlood(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	other := e.create(keyB, nil)
	c := e.commConn(keyA, s.ID)
	x := e.exec(keyA, s.ID, `import threading
from ipykernel.comm import Comm
flood = Comm(target_name='flood', data={})
stop = False
def run():
    while not stop:
        flood.send({'x': 'y' * 100})
threading.Thread(target=run, daemon=True).start()`, 0)
	if x.Status != "ok" {
		t.Fatalf("the flood: %+v", x)
	}
	frames := 0
	c.until("a thousand comm frames of the flood", func(ev api.Event) bool {
		if ev.Type == api.EventComm && ev.Msg.Header.MsgType == "comm_msg" {
			frames++
		}
		return frames == 1000
	})
	for i := range 5 {
		// It completes; its output may be lost, as the kernel's PUB
		// socket drops what its flood leaves no room for.
		if x := e.exec(keyA, s.ID, fmt.Sprintf("print(%d)", i), 0); x.Status != "ok" {
			t.Fatalf("an execution during the flood: %+v", x)
		}
		if x := e.exec(keyB, other.ID, "1 + 1", 0); string(x.Result) != `{"text/plain":"2"}` {
			t.Fatalf("another session during the flood: %+v", x)
		}
	}
	if x := e.exec(keyA, s.ID, "stop = True", 0); x.Status != "ok" {
		t.Fatalf("stop: %+v", x)
	}
}

// TestCommsLargeFrame: an ipywidgets FileUpload's value (a file's bytes
// in a comm_msg buffer, 3 MiB here) goes through the native WebSocket
// although its frame is above the code limit (1 MiB plus 64 KiB): the
// kernel's widget holds the file, byte for byte. Only comm frames may be
// that large: a large execute frame is rejected with its id and the
// connection goes on. With one large frame's share per tenant, files
// picked one after the other all go: each frame's share comes back once
// the frame is sent to the kernel.
func TestCommsLargeFrame(t *testing.T) {
	e := newEnvGateway(t, localRuntime(t), sessions.Config{}, gateway.Config{WSLargeFrameBudget: smallLargeFrameBudget})
	s := e.create(keyA, nil)
	c := e.commConn(keyA, s.ID)

	c.send(map[string]any{"type": "execute", "id": "padded", "code": "1", "padding": strings.Repeat("p", 2<<20)})
	rej := c.answer("padded")
	if rej.Type != api.EventRejected || rej.Code != "frame_too_large" {
		t.Fatalf("a 2 MiB execute frame: %+v", rej)
	}

	c.send(map[string]any{"type": "execute", "id": "w", "code": "import ipywidgets as w\nu = w.FileUpload()\nu"})
	var upload string
	all := c.until("the upload's cell", func(ev api.Event) bool {
		if ev.Type == api.EventComm && ev.Msg.Header.MsgType == "comm_open" && strings.Contains(string(ev.Msg.Content), "FileUploadModel") {
			upload, _ = commContent(ev)["comm_id"].(string)
		}
		return ev.Type == api.EventDone && ev.ID == "w"
	})
	if all[len(all)-1].Status != "ok" || upload == "" {
		t.Fatalf("the upload's cell: %+v", all)
	}
	file := make([]byte, 3<<20)
	for i := range file {
		file[i] = byte(i*7 + i>>11)
	}
	// What the FileUpload view sends once the user picked a file: three
	// files, one after the other, sent without waiting for the answers.
	const picks = 3
	for i := range picks {
		file[0] = byte(i)
		state := map[string]any{"value": []any{map[string]any{"name": fmt.Sprintf("big-%d.bin", i), "type": "application/octet-stream", "size": len(file), "last_modified": 1700000000000}}}
		c.send(map[string]any{"type": "comm", "id": fmt.Sprint("pick-", i), "msg_type": "comm_msg", "metadata": map[string]any{},
			"content": map[string]any{"comm_id": upload, "data": map[string]any{"method": "update", "state": state, "buffer_paths": []any{[]any{"value", 0, "content"}}}},
			"buffers": []string{base64.StdEncoding.EncodeToString(file)}})
	}
	for i := range picks {
		sent := c.answer(fmt.Sprint("pick-", i))
		if sent.Type != api.EventCommSent {
			t.Fatalf("the 3 MiB upload %d: %+v", i, sent)
		}
		c.until("the upload's idle", idleOf(sent.MsgID))
	}
	sum := sha256.Sum256(file)
	x := e.exec(keyA, s.ID, "import hashlib\nf = u.value[0]\nprint(f.name, len(f.content), hashlib.sha256(f.content).hexdigest())", 0)
	if want := fmt.Sprintf("big-%d.bin %d %s\n", picks-1, len(file), hex.EncodeToString(sum[:])); x.Stdout != want {
		t.Fatalf("the kernel's upload: %q (%s), want %q", x.Stdout, x.Status, want)
	}
}
