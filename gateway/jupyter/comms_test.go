package jupyter_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
)

// Comms (widgets) over the channels WebSocket, on real kernels with
// ipywidgets 8 and tqdm: the client's comm messages reach the kernel,
// the kernel's reach every connection (in the kernel's order with the
// cell's output, while the cell runs), and a connection cannot message
// another's comm.

func TestJupyterComms(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			t.Run("widgets legacy", func(t *testing.T) { widgetRoundTrip(t, e, false) })
			t.Run("widgets v1", func(t *testing.T) { widgetRoundTrip(t, e, true) })
			t.Run("tqdm while the cell runs", func(t *testing.T) { tqdmProgress(t, e) })
			t.Run("ownership", func(t *testing.T) { commOwnership(t, e) })
		})
	}
}

// widgetCell makes a slider, a button whose click prints the slider's
// value, and an image (binary buffers), and shows them.
const widgetCell = `import ipywidgets as w
s = w.IntSlider(value=3)
b = w.Button(description='go')
b.on_click(lambda _: print('clicked', s.value))
img = w.Image(value=b'\x89PNG-before', format='png')
display(s, b, img)`

// commOpens maps the widget model names of the comm_opens in msgs to
// their comm ids, and returns the index of each comm_open in msgs.
func commOpens(t *testing.T, msgs []jm) (map[string]string, map[string]int) {
	t.Helper()
	ids, at := map[string]string{}, map[string]int{}
	for i, m := range msgs {
		if m.Header.MsgType != "comm_open" {
			continue
		}
		if m.Channel != "iopub" || m.Content["target_name"] != "jupyter.widget" {
			t.Fatalf("comm_open %v", m)
		}
		state, _ := m.Content["data"].(map[string]any)["state"].(map[string]any)
		model, _ := state["_model_name"].(string)
		id, _ := m.Content["comm_id"].(string)
		ids[model], at[id] = id, i
	}
	return ids, at
}

// widgetRoundTrip: the widgets' comm_opens arrive with the cell as their
// parent, each before the display that shows it, the image's bytes as a
// buffer; a slider value the client sets is the kernel's, with the
// handler's busy and idle naming the client's message; a click runs the
// callback, whose output names the click; bytes the client sends in a
// buffer are the image's value; comm_info lists the widgets.
func widgetRoundTrip(t *testing.T, e *env, v1 bool) {
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, v1, "session_id="+randomHex(8))
	rep, all := c.request("shell", "execute_request", map[string]any{"code": widgetCell})
	if rep.Content["status"] != "ok" {
		t.Fatalf("the widget cell: %v %v", rep, all)
	}
	ids, at := commOpens(t, all)
	slider, button, image := ids["IntSliderModel"], ids["ButtonModel"], ids["ImageModel"]
	if slider == "" || button == "" || image == "" {
		t.Fatalf("no comm_open for each widget: %v in %v", ids, all)
	}
	shown := 0
	for i, m := range all {
		if m.Header.MsgType != "display_data" {
			continue
		}
		view, _ := m.Content["data"].(map[string]any)["application/vnd.jupyter.widget-view+json"].(map[string]any)
		id, _ := view["model_id"].(string)
		if open, ok := at[id]; !ok || open > i {
			t.Fatalf("the display of %q (message %d) came before its comm_open (%d): %v", id, i, open, all)
		}
		shown++
	}
	if shown != 3 {
		t.Fatalf("%d widget displays: %v", shown, all)
	}
	for _, m := range all {
		if m.Header.MsgType == "comm_open" && m.Parent.MsgID != rep.Parent.MsgID {
			t.Fatalf("comm_open's parent %q, want the cell's %q", m.Parent.MsgID, rep.Parent.MsgID)
		}
		if m.Header.MsgType == "comm_open" && m.Content["comm_id"] == image {
			if len(m.Buffers) != 1 || !bytes.Equal(m.Buffers[0], []byte("\x89PNG-before")) || !m.Binary {
				t.Fatalf("the image's comm_open carries buffers %q (binary frame: %v)", m.Buffers, m.Binary)
			}
		}
	}

	// The slider: the client's update is the kernel's value.
	upd := c.send("shell", "comm_msg", map[string]any{"comm_id": slider, "data": map[string]any{"method": "update", "state": map[string]any{"value": 7}, "buffer_paths": []any{}}})
	got := c.until("the update's idle", func(m jm) bool {
		return m.Parent.MsgID == upd && m.Header.MsgType == "status" && m.Content["execution_state"] == "idle"
	})
	if !busyFor(got, upd) {
		t.Fatalf("no busy for the update: %v", got)
	}
	if _, iopub := c.execute("s.value"); resultText(t, iopub) != "7" {
		t.Fatalf("the slider after the client's update: %v", iopub)
	}

	// The button: a click runs the callback; its output names the click.
	click := c.send("shell", "comm_msg", map[string]any{"comm_id": button, "data": map[string]any{"method": "custom", "content": map[string]any{"event": "click"}}})
	got = c.until("the click's output", func(m jm) bool { return m.Header.MsgType == "stream" && m.Parent.MsgID == click })
	if out := got[len(got)-1]; out.Content["text"] != "clicked 7\n" || out.Channel != "iopub" || out.Parent.MsgType != "comm_msg" {
		t.Fatalf("click output %v (parent %+v)", out, out.Parent)
	}

	// The image: bytes in a buffer of the client's message.
	png := []byte("\x89PNG\r\n\x1a\n-from-the-client\x00\xff")
	upd = c.send("shell", "comm_msg", map[string]any{"comm_id": image, "data": map[string]any{"method": "update", "state": map[string]any{}, "buffer_paths": [][]string{{"value"}}}}, png)
	c.until("the image update's idle", func(m jm) bool {
		return m.Parent.MsgID == upd && m.Header.MsgType == "status" && m.Content["execution_state"] == "idle"
	})
	if _, iopub := c.execute("bytes(img.value)"); resultText(t, iopub) != pyBytes(png) {
		t.Fatalf("the image after the client's buffer: %v, want %s", resultText(t, iopub), pyBytes(png))
	}

	// comm_info lists the widgets.
	info, _ := c.request("shell", "comm_info_request", map[string]any{"target_name": "jupyter.widget"})
	comms, _ := info.Content["comms"].(map[string]any)
	for _, id := range []string{slider, button, image} {
		if c, _ := comms[id].(map[string]any); info.Content["status"] != "ok" || c["target_name"] != "jupyter.widget" {
			t.Fatalf("comm_info %v lacks %s", info, id)
		}
	}
}

// busyFor reports whether msgs have a status busy whose parent is id.
func busyFor(msgs []jm, id string) bool {
	for _, m := range msgs {
		if m.Parent.MsgID == id && m.Header.MsgType == "status" && m.Content["execution_state"] == "busy" {
			return true
		}
	}
	return false
}

// pyBytes is Python's repr of b (printable ASCII as is, the rest \x..).
func pyBytes(b []byte) string {
	var s strings.Builder
	s.WriteString("b'")
	for _, c := range b {
		switch {
		case c == '\r':
			s.WriteString(`\r`)
		case c == '\n':
			s.WriteString(`\n`)
		case c == '\\' || c == '\'':
			s.WriteString(`\` + string(c))
		case c >= 0x20 && c < 0x7f:
			s.WriteByte(c)
		default:
			fmt.Fprintf(&s, `\x%02x`, c)
		}
	}
	s.WriteString("'")
	return s.String()
}

// tqdmProgress: a tqdm.notebook bar's updates arrive while its cell runs:
// before the cell's execute_reply, and, in a cell that then waits on
// input(), before the client answers it.
func tqdmProgress(t *testing.T, e *env) {
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, true, "session_id="+randomHex(8))
	isUpdate := func(m jm) bool {
		data, _ := m.Content["data"].(map[string]any)
		state, _ := data["state"].(map[string]any)
		_, value := state["value"]
		return m.Header.MsgType == "comm_msg" && data["method"] == "update" && value
	}
	rep, all := c.request("shell", "execute_request", map[string]any{"code": "from tqdm.notebook import tqdm\nimport time\nfor i in tqdm(range(20)):\n    time.sleep(0.05)"})
	updates := 0
	for _, m := range all {
		if m.Header.MsgType == "execute_reply" {
			break
		}
		if isUpdate(m) {
			updates++
		}
	}
	if rep.Content["status"] != "ok" || updates == 0 {
		t.Fatalf("%d progress updates before the execute_reply: %v", updates, all)
	}
	id := c.send("shell", "execute_request", map[string]any{"code": "for i in tqdm(range(5)):\n    time.sleep(0.05)\ninput('more? ')", "allow_stdin": true})
	got := c.until("the input_request", func(m jm) bool { return m.Header.MsgType == "input_request" })
	updates = 0
	for _, m := range got {
		if isUpdate(m) {
			updates++
		}
	}
	if updates == 0 {
		t.Fatalf("no progress update before the cell waited for input: %v", got)
	}
	c.sendWith("stdin", map[string]any{"msg_id": randomHex(8), "msg_type": "input_reply", "session": c.session, "username": "t", "version": "5.3"},
		map[string]any{"value": "no"})
	if rep, _ := c.await(id, "the cell"); rep.Content["status"] != "ok" {
		t.Fatalf("the cell: %v", rep)
	}
}

// commOwnership: two connections to one kernel. Both get the kernel's
// comm traffic; the second cannot message or close a comm the first
// opened (nor reopen its id), but can message the kernel's widgets; the
// first's comm works on. Malformed comm messages are answered busy then
// idle and change nothing.
func commOwnership(t *testing.T, e *env) {
	k := e.startKernel(keyA, nil)
	a := e.channels(t, keyA, k.ID, false, "session_id=a-"+randomHex(4))
	b := e.channels(t, keyA, k.ID, true, "session_id=b-"+randomHex(4))
	rep, _ := a.execute(`import ipywidgets as w
s = w.IntSlider(value=1)
def echo(comm, msg):
    comm.on_msg(lambda m: comm.send({'echo': m['content']['data']}))
get_ipython().kernel.comm_manager.register_target('echo', echo)`)
	if rep.Content["status"] != "ok" {
		t.Fatalf("setup: %v", rep)
	}
	got := b.until("the slider's comm_open on the other connection", func(m jm) bool {
		ids, _ := commOpens(t, []jm{m})
		return ids["IntSliderModel"] != ""
	})
	slider := got[len(got)-1].Content["comm_id"].(string)

	// echoes reads c's messages until the echo of value x, returning the
	// values echoed before it.
	echoes := func(c *jclient, x float64) []float64 {
		t.Helper()
		var seen []float64
		c.until(fmt.Sprintf("the echo of %v", x), func(m jm) bool {
			if m.Header.MsgType != "comm_msg" || m.Content["comm_id"] != "a-comm" {
				return false
			}
			v, _ := m.Content["data"].(map[string]any)["echo"].(map[string]any)["x"].(float64)
			seen = append(seen, v)
			return v == x
		})
		return seen[:len(seen)-1]
	}
	a.send("shell", "comm_open", map[string]any{"comm_id": "a-comm", "target_name": "echo", "data": map[string]any{}})
	first := a.send("shell", "comm_msg", map[string]any{"comm_id": "a-comm", "data": map[string]any{"x": 1}})
	got = a.until("the echo of a's message", func(m jm) bool { return m.Header.MsgType == "comm_msg" && m.Content["comm_id"] == "a-comm" })
	if echo := got[len(got)-1]; echo.Parent.MsgID != first {
		t.Fatalf("the echo's parent %q, want a's message %q", echo.Parent.MsgID, first)
	}
	if seen := echoes(b, 1); len(seen) != 0 { // the kernel's messages go to every connection
		t.Fatalf("b saw %v", seen)
	}

	// b's messages to a's comm are refused: busy then idle, nothing sent.
	for _, msgType := range []string{"comm_msg", "comm_close"} {
		id := b.send("shell", msgType, map[string]any{"comm_id": "a-comm", "data": map[string]any{"x": 2}})
		got := b.until("the idle of b's "+msgType, func(m jm) bool {
			return m.Parent.MsgID == id && m.Header.MsgType == "status" && m.Content["execution_state"] == "idle"
		})
		if !busyFor(got, id) {
			t.Fatalf("b's refused %s: %v", msgType, got)
		}
	}
	id := b.send("shell", "comm_open", map[string]any{"comm_id": "a-comm", "target_name": "echo", "data": map[string]any{}})
	got = b.until("the comm_close of b's comm_open", func(m jm) bool { return m.Header.MsgType == "comm_close" && m.Parent.MsgID == id })
	if got[len(got)-1].Content["comm_id"] != "a-comm" {
		t.Fatalf("b's refused comm_open: %v", got)
	}
	// Malformed comm messages change nothing either.
	for _, content := range []any{map[string]any{"data": map[string]any{"x": 2}}, map[string]any{"comm_id": 7}, map[string]any{"comm_id": "a-comm", "data": "x"}} {
		b.send("shell", "comm_msg", content)
	}
	if v1 := b.v1; v1 {
		b.raw(websocket.BinaryMessage, []byte{6, 0, 0, 0, 0, 0, 0, 0, 1})
	}
	b.sync()
	a.send("shell", "comm_msg", map[string]any{"comm_id": "a-comm", "data": map[string]any{"x": 3}})
	if seen := echoes(a, 3); len(seen) != 0 {
		t.Fatalf("another connection's messages reached a's comm: echoes %v before a's", seen)
	}

	// b may message the kernel's widget.
	upd := b.send("shell", "comm_msg", map[string]any{"comm_id": slider, "data": map[string]any{"method": "update", "state": map[string]any{"value": 9}, "buffer_paths": []any{}}})
	b.until("the idle of b's update", func(m jm) bool {
		return m.Parent.MsgID == upd && m.Header.MsgType == "status" && m.Content["execution_state"] == "idle"
	})
	if _, iopub := b.execute("s.value"); resultText(t, iopub) != "9" {
		t.Fatalf("the slider after b's update: %v", iopub)
	}
	// A /v1 client of the same session is another owner too; once a has
	// closed its comm, the comm is gone.
	v := e.ws(keyA, strings.ReplaceAll(k.ID, "-", ""))
	rejection := func(id string) string {
		t.Helper()
		v.send(map[string]any{"type": "comm", "id": id, "msg_type": "comm_msg", "content": map[string]any{"comm_id": "a-comm", "data": map[string]any{"x": 5}}})
		evs := v.until(func(f frame) bool { return (f.Type == "rejected" || f.Type == "comm_sent") && f.ID == id })
		return evs[len(evs)-1].Code
	}
	if code := rejection("v1"); code != "comm_not_owned" {
		t.Fatalf("/v1 messaging a's comm: %q", code)
	}
	a.send("shell", "comm_close", map[string]any{"comm_id": "a-comm", "data": map[string]any{}})
	a.sync()
	if code := rejection("v2"); code != "bad_comm" {
		t.Fatalf("/v1 messaging a's closed comm: %q", code)
	}
	// A comm a connection left open is closed in the kernel once the
	// connection ends.
	a.send("shell", "comm_open", map[string]any{"comm_id": "a-left", "target_name": "echo", "data": map[string]any{}})
	a.sync()
	if _, iopub := b.execute("'a-left' in get_ipython().kernel.comm_manager.comms"); resultText(t, iopub) != "True" {
		t.Fatalf("a's comm before a left: %v", iopub)
	}
	a.close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, iopub := b.execute("'a-left' in get_ipython().kernel.comm_manager.comms")
		if resultText(t, iopub) == "False" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's comm still open in the kernel 30s after a left: 'a-left' in comms is %s", resultText(t, iopub))
		}
	}
}

// TestJupyterCommsPausedKernel: a kernel frozen for going unused handles
// a widget's click: the comm message thaws it, as a request does.
func TestJupyterCommsPausedKernel(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{PauseAfter: 600 * time.Millisecond, ReapInterval: 50 * time.Millisecond})
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, false, "")
	_, all := c.request("shell", "execute_request", map[string]any{"code": "import ipywidgets as w\nb = w.Button()\nb.on_click(lambda _: print('clicked'))"})
	ids, _ := commOpens(t, all)
	sid := strings.ReplaceAll(k.ID, "-", "")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s, err := e.client(keyA).GetSession(context.Background(), sid)
		if err != nil {
			t.Fatal(err)
		}
		if s.Paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kernel was never paused within 20s: last %+v", s)
		}
	}
	click := c.send("shell", "comm_msg", map[string]any{"comm_id": ids["ButtonModel"], "data": map[string]any{"method": "custom", "content": map[string]any{"event": "click"}}})
	got := c.until("the click's output", func(m jm) bool { return m.Header.MsgType == "stream" && m.Parent.MsgID == click })
	if got[len(got)-1].Content["text"] != "clicked\n" {
		t.Fatalf("click on a paused kernel: %v", got)
	}
}

// TestJupyterCommsOutputWidgetOrder: a cell's comm messages and its
// output reach a Jupyter client in the kernel's order, so that what an
// Output widget captures (JupyterLab's hooks the iopub messages of the
// msg_id it holds) comes while its msg_id is the cell's, and what follows
// the with block after it is reset.
func TestJupyterCommsOutputWidgetOrder(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, true, "session_id="+randomHex(8))
	const cell = `import ipywidgets as w
out = w.Output()
for i in range(20):
    with out:
        display({'image/png': 'QUJD' * 20000, 'text/plain': 'inside %d' % i}, raw=True)
display({'text/plain': 'outside'}, raw=True)`
	for run := range 3 {
		rep, msgs := c.execute(cell)
		if rep.Content["status"] != "ok" {
			t.Fatalf("the cell: %v", rep)
		}
		id := rep.Parent.MsgID
		capture, inside, outside := "", 0, 0
		for _, m := range msgs {
			switch m.Header.MsgType {
			case "comm_msg":
				data, _ := m.Content["data"].(map[string]any)
				state, _ := data["state"].(map[string]any)
				if msgID, ok := state["msg_id"].(string); ok && data["method"] == "update" {
					capture = msgID
				}
			case "display_data":
				data, _ := m.Content["data"].(map[string]any)
				text, _ := data["text/plain"].(string)
				switch {
				case strings.HasPrefix(text, "inside") && capture == id:
					inside++
				case text == "outside" && capture == "":
					outside++
				default:
					t.Fatalf("run %d: %q came while the Output widget's msg_id was %q (the cell is %q)", run, text, capture, id)
				}
			}
		}
		if inside != 20 || outside != 1 {
			t.Fatalf("run %d: %d displays inside the Output widget, %d outside, want 20 and 1", run, inside, outside)
		}
	}
}

// TestJupyterCommLargeMessage: an ipywidgets FileUpload's value (a 3 MiB
// file in a comm_msg buffer, as JupyterLab sends it once the user picks a
// file) reaches the kernel's widget byte for byte in both framings,
// although the frame is above the code limit (1 MiB plus 256 KiB). Only
// comm messages may be that large: a large execute_request closes the
// connection with 1009, as any frame above the limits does.
func TestJupyterCommLargeMessage(t *testing.T) {
	// One large frame's share per tenant (twice an 8 MiB comm message's
	// frame, with a little room): a share that is not given back holds
	// up the next connection's upload.
	e := newEnvGateway(t, localRuntime(t), sessions.Config{}, gateway.Config{WSLargeFrameBudget: 2 * (8<<20*4/3 + 256<<10 + 64<<10)})
	k := e.startKernel(keyA, nil)
	file := make([]byte, 3<<20)
	for i := range file {
		file[i] = byte(i*7 + i>>11)
	}
	sum := sha256.Sum256(file)
	for _, v1 := range []bool{false, true} {
		c := e.channels(t, keyA, k.ID, v1, "session_id="+randomHex(8))
		rep, all := c.execute("import ipywidgets as w\nu = w.FileUpload()\nu")
		ids, _ := commOpens(t, all)
		upload := ids["FileUploadModel"]
		if rep.Content["status"] != "ok" || upload == "" {
			t.Fatalf("v1=%v: the upload's cell: %v %v", v1, rep, all)
		}
		name := fmt.Sprintf("big-%v.bin", v1)
		state := map[string]any{"value": []any{map[string]any{"name": name, "type": "application/octet-stream", "size": len(file), "last_modified": 1700000000000}}}
		upd := c.send("shell", "comm_msg", map[string]any{"comm_id": upload, "data": map[string]any{"method": "update", "state": state, "buffer_paths": []any{[]any{"value", 0, "content"}}}}, file)
		got := c.until("the upload's idle", func(m jm) bool {
			return m.Parent.MsgID == upd && m.Header.MsgType == "status" && m.Content["execution_state"] == "idle"
		})
		if !busyFor(got, upd) {
			t.Fatalf("v1=%v: no busy for the upload: %v", v1, got)
		}
		_, iopub := c.execute("import hashlib\nf = u.value[0]\nprint(f.name, len(f.content), hashlib.sha256(f.content).hexdigest())")
		if got, want := streamText(iopub), fmt.Sprintf("%s %d %s\n", name, len(file), hex.EncodeToString(sum[:])); got != want {
			t.Fatalf("v1=%v: the kernel's upload: %q, want %q", v1, got, want)
		}
	}

	c := e.channels(t, keyA, k.ID, false, "session_id="+randomHex(8))
	c.send("shell", "execute_request", map[string]any{"code": "1", "padding": strings.Repeat("p", 2<<20)})
	for {
		if _, ok := c.next(30 * time.Second); !ok {
			break
		}
	}
	c.errMu.Lock()
	err := c.err
	c.errMu.Unlock()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("a 2 MiB execute_request: the connection ended with %v, want 1009", err)
	}
}
