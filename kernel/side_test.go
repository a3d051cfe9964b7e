package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
)

// sideReader reads a client's side stream, one message at a time.
type sideReader struct {
	c    *kernel.Client
	left []*kernel.Message
}

// until reads until match accepts a message, and returns that message.
func (r *sideReader) until(t *testing.T, what string, match func(*kernel.Message) bool) *kernel.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seen []string
	for {
		for len(r.left) > 0 {
			m := r.left[0]
			r.left = r.left[1:]
			if match(m) {
				return m
			}
			seen = append(seen, m.Header.MsgType)
		}
		var err error
		if r.left, err = r.c.Side(ctx, nil); err != nil {
			t.Fatalf("side stream, waiting for %s (saw %v): %v", what, seen, err)
		}
	}
}

type commContent struct {
	CommID     string          `json:"comm_id"`
	TargetName string          `json:"target_name"`
	Data       json.RawMessage `json:"data"`
	Name       string          `json:"name"`
	Text       string          `json:"text"`
}

func contentOf(t *testing.T, m *kernel.Message) commContent {
	t.Helper()
	var c commContent
	if err := json.Unmarshal(m.Content, &c); err != nil {
		t.Fatalf("%s content %s: %v", m.Header.MsgType, m.Content, err)
	}
	return c
}

// TestSideStreamCarriesWidgetComms: on a real ipykernel with ipywidgets,
// a widget's comm_open (sent during its cell) reaches the side stream; a
// comm_msg sent with Send changes the widget's value in the kernel; a
// Button's click runs its callback, whose output arrives on the side
// stream with the click's message as its parent; comm_info lists both.
func TestSideStreamCarriesWidgetComms(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	side := &sideReader{c: c}

	r := run(t, c, "import ipywidgets as w\ns = w.IntSlider(value=3)\nb = w.Button(description='go')\nb.on_click(lambda _: print('clicked', s.value))", kernel.ExecuteOptions{MsgID: "widgets-cell"})
	if r.err != nil || r.reply.Status != "ok" {
		t.Fatalf("widgets: %+v", r)
	}
	// The comm_opens came before the cell's reply: they are counted once
	// Execute has returned (what keeps a widget's comm_open ahead of its
	// display for a consumer of both streams).
	if n := c.SideAccepted(); n < 2 {
		t.Fatalf("SideAccepted %d after the cell that opened two comms", n)
	}
	var slider, button string
	for slider == "" || button == "" {
		m := side.until(t, "the widgets' comm_open", func(m *kernel.Message) bool { return m.Header.MsgType == kernel.MsgCommOpen })
		cc := contentOf(t, m)
		if cc.TargetName != "jupyter.widget" {
			t.Fatalf("comm_open target %q", cc.TargetName)
		}
		if m.Parent.MsgID != "widgets-cell" { // the caller's msg_id (ExecuteOptions.MsgID)
			t.Fatalf("comm_open's parent %+v, want the cell's msg_id", m.Parent)
		}
		var data struct {
			State struct {
				Model string `json:"_model_name"`
			}
		}
		if err := json.Unmarshal(cc.Data, &data); err != nil {
			t.Fatalf("comm_open data %s: %v", cc.Data, err)
		}
		switch data.State.Model {
		case "IntSliderModel":
			slider = cc.CommID
		case "ButtonModel":
			button = cc.CommID
		}
	}

	update, _ := json.Marshal(map[string]any{"comm_id": slider, "data": map[string]any{"method": "update", "state": map[string]any{"value": 7}, "buffer_paths": []any{}}})
	if _, err := c.Send(kernel.Shell, kernel.MsgCommMsg, update, nil, nil); err != nil {
		t.Fatalf("send update: %v", err)
	}
	click, _ := json.Marshal(map[string]any{"comm_id": button, "data": map[string]any{"method": "custom", "content": map[string]any{"event": "click"}}})
	h, err := c.SendID(kernel.Shell, "the-click", kernel.MsgCommMsg, click, nil, nil)
	if err != nil || h.MsgID != "the-click" {
		t.Fatalf("send click: %+v %v", h, err)
	}
	out := side.until(t, "the click callback's output", func(m *kernel.Message) bool {
		return m.Header.MsgType == "stream" && m.Parent.MsgID == h.MsgID
	})
	if got := contentOf(t, out).Text; got != "clicked 7\n" {
		t.Fatalf("click output %q, want the slider's new value", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := c.Request(ctx, kernel.Shell, "comm_info_request", map[string]string{"target_name": "jupyter.widget"})
	if err != nil {
		t.Fatalf("comm_info: %v", err)
	}
	var comms struct {
		Comms map[string]struct {
			TargetName string `json:"target_name"`
		}
	}
	if err := json.Unmarshal(info.Content, &comms); err != nil || comms.Comms[slider].TargetName != "jupyter.widget" || comms.Comms[button].TargetName != "jupyter.widget" {
		t.Fatalf("comm_info_reply %s: %v", info.Content, err)
	}
	if _, err := c.Send(kernel.Shell, kernel.MsgCommMsg, json.RawMessage(`[1]`), nil, nil); err == nil {
		t.Fatal("Send took content that is not an object")
	}
	if _, err := c.Send(kernel.IOPub, kernel.MsgCommMsg, update, nil, nil); err == nil {
		t.Fatal("Send sent on iopub")
	}
}

// TestCommEventsInOrder: with ExecuteOptions.CommEvents, a cell's comm
// messages come to onEvent in the kernel's order with its output (an
// Output widget's msg_id set, the display it captures, the msg_id reset:
// on two streams the reset could overtake the display), not on the side
// stream; without it they take the side stream.
func TestCommEventsInOrder(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	code := "import ipywidgets as w\nout = w.Output()\nwith out:\n    display('captured')\nprint('after')"
	before := c.SideAccepted()
	r := run(t, c, code, kernel.ExecuteOptions{MsgID: "in-order", CommEvents: true})
	if r.err != nil || r.reply.Status != "ok" {
		t.Fatalf("the cell: %+v", r)
	}
	var seq []string
	for _, ev := range r.events {
		switch ev.Kind {
		case kernel.EventComm:
			if ev.Msg == nil || ev.Msg.Parent.MsgID != "in-order" {
				t.Fatalf("comm event %+v: want the cell as parent", ev.Msg)
			}
			var cc struct {
				Data struct {
					Method string         `json:"method"`
					State  map[string]any `json:"state"`
				} `json:"data"`
			}
			if err := json.Unmarshal(ev.Msg.Content, &cc); err != nil {
				t.Fatalf("comm content %s: %v", ev.Msg.Content, err)
			}
			if id, ok := cc.Data.State["msg_id"]; ok && cc.Data.Method == "update" {
				seq = append(seq, fmt.Sprintf("msg_id=%v", id))
			} else {
				seq = append(seq, ev.Msg.Header.MsgType)
			}
		case kernel.EventDisplay:
			seq = append(seq, "display")
		case kernel.EventStream:
			seq = append(seq, "stream")
		}
	}
	want := []string{"msg_id=in-order", "display", "msg_id=", "stream"}
	var got []string
	for _, s := range seq {
		if slices.Contains(want, s) {
			got = append(got, s)
		}
	}
	if !slices.Equal(got, want) || !slices.Contains(seq, "comm_open") {
		t.Fatalf("events %q, want a comm_open and %q in that order", seq, want)
	}
	// The side stream took nothing of the cell's comm traffic (other
	// requests' late status messages may be there).
	if n := c.SideAccepted(); n > before {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for got := int64(0); got < n-before; {
			msgs, err := c.Side(ctx, nil)
			if err != nil {
				t.Fatalf("side stream: %v", err)
			}
			for _, m := range msgs {
				if strings.HasPrefix(m.Header.MsgType, "comm_") {
					t.Fatalf("the cell's %s (parent %q) took the side stream too", m.Header.MsgType, m.Parent.MsgID)
				}
			}
			got += int64(len(msgs))
		}
	}
	before = c.SideAccepted()

	// Without CommEvents they take the side stream.
	r = run(t, c, code, kernel.ExecuteOptions{MsgID: "on-side"})
	if r.err != nil || r.reply.Status != "ok" {
		t.Fatalf("the cell: %+v", r)
	}
	for _, ev := range r.events {
		if ev.Kind == kernel.EventComm {
			t.Fatalf("a comm event without CommEvents: %+v", ev.Msg)
		}
	}
	if n := c.SideAccepted(); n < before+3 {
		t.Fatalf("SideAccepted %d after a cell that sent at least 3 comm messages (was %d)", n, before)
	}
}

// TestSideReadyKeepsTheCellsOutputFirst: a comm handler's output that
// the kernel sends after a cell's output waits (SideReady) until the
// cell's caller has handled that output: here a click sent while the
// cell's first output is being handled runs its callback once the cell
// ends, and its output, already on the side stream, is not ready until
// onEvent has returned and the cell's events are all handled.
func TestSideReadyKeepsTheCellsOutputFirst(t *testing.T) {
	k := startBareKernel(t)
	c := dial(t, k.info)
	side := &sideReader{c: c}
	if r := run(t, c, "import ipywidgets as w\nb = w.Button()\nb.on_click(lambda _: print('handled'))", kernel.ExecuteOptions{}); r.err != nil || r.reply.Status != "ok" {
		t.Fatalf("button: %+v", r)
	}
	button := contentOf(t, side.until(t, "the button's comm_open", func(m *kernel.Message) bool {
		return m.Header.MsgType == kernel.MsgCommOpen && strings.Contains(string(m.Content), `"ButtonModel"`)
	})).CommID
	click, _ := json.Marshal(map[string]any{"comm_id": button, "data": map[string]any{"method": "custom", "content": map[string]any{"event": "click"}}})

	handlerOut := make(chan *kernel.Message, 1)
	go func() { // the side stream's consumer
		defer close(handlerOut)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			msgs, err := c.Side(ctx, nil)
			for _, m := range msgs {
				if m.Header.MsgType == "stream" && m.Parent.MsgID == "the-click" {
					handlerOut <- m
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	var out *kernel.Message
	canceled, cancel := context.WithCancel(context.Background())
	cancel() // SideReady with it answers at once: ready (nil) or not (its error)
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	handled := false
	_, err := c.Execute(ctx, "print('first')", kernel.ExecuteOptions{}, func(ev kernel.Event) {
		if ev.Kind != kernel.EventStream || handled {
			return
		}
		handled = true
		if _, err := c.SendID(kernel.Shell, "the-click", kernel.MsgCommMsg, click, nil, nil); err != nil {
			t.Errorf("click: %v", err)
			return
		}
		// The kernel ends the cell, then runs the callback: its output
		// reaches the side stream while this event is being handled.
		if out = <-handlerOut; out == nil {
			t.Error("no callback output on the side stream")
			return
		}
		if err := c.SideReady(canceled, out); err == nil {
			t.Error("the callback's output was ready while the cell's earlier output was still being handled")
		}
	})
	if err != nil || !handled || out == nil {
		t.Fatalf("cell: %v (handled %v, callback output %v)", err, handled, out != nil)
	}
	if err := c.SideReady(ctx, out); err != nil {
		t.Fatalf("the callback's output once the cell's output was handled: %v", err)
	}
	if got := contentOf(t, out).Text; got != "handled\n" {
		t.Fatalf("callback output %q", got)
	}
}
