package gateway_test

import (
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
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
)

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
