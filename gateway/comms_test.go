package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	glclient "github.com/glassroom/glassroom/client"
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
