package web_test

// Browser test of the notebook's widget layer (js/comms.js, js/widgets.js
// and the widgets bundle) in Debian's headless Chromium, under the page's
// real CSP, with the session's WebSocket played by a script: the gateway
// serves the page and the REST API over a real local runtime, but its
// /v1/sessions/{id}/ws is replaced by widgetKernel, which speaks the comm
// protocol of the native WebSocket (comm events and frames, comm_sent,
// comm_info) as the gateway and a kernel with ipywidgets 8 would, with the
// messages ipywidgets 8.1 makes (testdata/widgets/widgets.json, from
// gen.py). This proves the page's side of the contract, with cases a real
// kernel does not make on demand (a gateway-made msg_id); the end-to-end
// test with a real kernel and the gateway's comm relay is
// TestBrowserWidgetsReal.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
)

// widgetFixture is testdata/widgets/widgets.json.
type widgetFixture struct {
	Version string `json:"version"`
	Widgets map[string]struct {
		ModelID string `json:"model_id"`
		Opens   []struct {
			Content  map[string]any `json:"content"`
			Metadata map[string]any `json:"metadata"`
		} `json:"opens"`
		Data map[string]any `json:"data"`
	} `json:"widgets"`
}

// widgetKernel plays the session's WebSocket: a kernel whose cells make
// widgets and whose widgets answer the page as ipywidgets does.
type widgetKernel struct {
	t       *testing.T
	fixture widgetFixture
	frames  chan map[string]any // every frame the page sent

	mu     sync.Mutex
	seq    int
	count  int
	clicks int
	models map[string]map[string]any // comm id -> {model_name, model_module, model_module_version, state}
}

func newWidgetKernel(t *testing.T) *widgetKernel {
	t.Helper()
	raw, err := os.ReadFile("testdata/widgets/widgets.json")
	if err != nil {
		t.Fatal(err)
	}
	k := &widgetKernel{t: t, frames: make(chan map[string]any, 10000), models: map[string]map[string]any{}}
	if err := json.Unmarshal(raw, &k.fixture); err != nil {
		t.Fatalf("widgets.json: %v", err)
	}
	for _, name := range []string{"slider", "output", "button"} {
		if k.fixture.Widgets[name].ModelID == "" {
			t.Fatalf("widgets.json has no %s", name)
		}
	}
	return k
}

func (k *widgetKernel) id(name string) string { return k.fixture.Widgets[name].ModelID }

// wrap puts the script in front of the gateway's WebSockets of sessions.
func (k *widgetKernel) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/sessions/") && strings.HasSuffix(r.URL.Path, "/ws") {
			k.serve(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serve runs one connection until the page closes it.
func (k *widgetKernel) serve(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	send := func(ev map[string]any) bool {
		k.mu.Lock()
		k.seq++
		ev["seq"] = k.seq
		k.mu.Unlock()
		return conn.WriteJSON(ev) == nil
	}
	if !send(map[string]any{"type": "kernel", "state": "idle"}) {
		return
	}
	for {
		var f map[string]any
		if err := conn.ReadJSON(&f); err != nil {
			return
		}
		select {
		case k.frames <- f:
		default:
			k.t.Errorf("too many frames from the page")
		}
		for _, ev := range k.answer(f) {
			if !send(ev) {
				return
			}
		}
	}
}

// comm is a comm event: a kernel message with a parent.
func comm(msgType, parent string, content, metadata map[string]any) map[string]any {
	if metadata == nil {
		metadata = map[string]any{}
	}
	return map[string]any{"type": "comm", "msg": map[string]any{
		"header":        map[string]any{"msg_id": fmt.Sprintf("kernel-%s-%d", msgType, time.Now().UnixNano()), "msg_type": msgType},
		"parent_header": map[string]any{"msg_id": parent},
		"content":       content, "metadata": metadata, "buffers": []any{},
	}}
}

// answer is what the kernel sends for a frame of the page.
func (k *widgetKernel) answer(f map[string]any) []map[string]any {
	k.mu.Lock()
	defer k.mu.Unlock()
	id, _ := f["id"].(string)
	switch f["type"] {
	case "execute":
		code, _ := f["code"].(string)
		var names []string
		switch code {
		case "show slider":
			names = []string{"slider", "output"}
		case "show button":
			names = []string{"button"}
		case "show html":
			names = []string{"html"}
		case "restart":
			// As the gateway reports a kernel restart: the comms are gone.
			k.models = map[string]map[string]any{}
			k.count = 0
			return []map[string]any{{"type": "kernel", "state": "restarting", "reason": "asked"}, {"type": "kernel", "state": "idle"},
				{"type": "done", "id": id, "status": "ok", "duration_ms": 1}}
		}
		var out []map[string]any
		for _, name := range names {
			for _, o := range k.fixture.Widgets[name].Opens {
				commID, _ := o.Content["comm_id"].(string)
				data, _ := o.Content["data"].(map[string]any)
				state, _ := data["state"].(map[string]any)
				k.models[commID] = map[string]any{
					"model_name": state["_model_name"], "model_module": state["_model_module"],
					"model_module_version": state["_model_module_version"], "state": state,
				}
				out = append(out, comm("comm_open", id, o.Content, o.Metadata))
			}
		}
		for _, name := range names {
			out = append(out, map[string]any{"type": "display", "id": id, "data": k.fixture.Widgets[name].Data, "metadata": map[string]any{}})
		}
		k.count++
		return append(out, map[string]any{"type": "done", "id": id, "status": "ok", "execution_count": k.count, "duration_ms": 1})
	case "comm_info":
		comms := map[string]any{}
		for id := range k.models {
			comms[id] = map[string]any{"target_name": "jupyter.widget"}
		}
		return []map[string]any{{"type": "comm_info_reply", "id": id, "comms": comms}}
	case "comm":
		content, _ := f["content"].(map[string]any)
		commID, _ := content["comm_id"].(string)
		data, _ := content["data"].(map[string]any)
		// As the gateway: the frame goes to the kernel with its id as
		// msg_id, which comm_sent confirms, and the kernel's answers name
		// it as their parent. A click goes with another msg_id (as when
		// the id is taken), which the page learns from comm_sent.
		msgID := id
		if data["method"] == "custom" {
			msgID = "gateway-" + id
		}
		id = msgID
		out := []map[string]any{{"type": "comm_sent", "id": f["id"], "msg_id": msgID},
			comm("status", id, map[string]any{"execution_state": "busy"}, nil)}
		switch f["msg_type"] {
		case "comm_open":
			if content["target_name"] == "jupyter.widget.control" {
				states := map[string]any{}
				for id, m := range k.models {
					states[id] = m
				}
				out = append(out, comm("comm_msg", id, map[string]any{"comm_id": commID,
					"data": map[string]any{"method": "update_states", "states": states, "buffer_paths": []any{}}}, nil))
			}
		case "comm_msg":
			m := k.models[commID]
			switch data["method"] {
			case "update":
				state, _ := data["state"].(map[string]any)
				if m != nil {
					for key, v := range state {
						m["state"].(map[string]any)[key] = v
					}
				}
				// The slider's observer prints into the Output widget,
				// as interact does: with out: display(...).
				if v, ok := state["value"]; ok && commID == k.id("slider") {
					out = append(out,
						comm("comm_msg", id, map[string]any{"comm_id": k.id("output"), "data": map[string]any{"method": "update", "state": map[string]any{"msg_id": "kernel-side-" + id}, "buffer_paths": []any{}}}, nil),
						comm("clear_output", id, map[string]any{"wait": true}, nil),
						comm("display_data", id, map[string]any{"data": map[string]any{"text/plain": fmt.Sprintf("value is %v", v)}, "metadata": map[string]any{}}, nil),
						comm("comm_msg", id, map[string]any{"comm_id": k.id("output"), "data": map[string]any{"method": "update", "state": map[string]any{"msg_id": ""}, "buffer_paths": []any{}}}, nil))
				}
			case "request_state":
				if m != nil {
					out = append(out, comm("comm_msg", id, map[string]any{"comm_id": commID, "data": map[string]any{"method": "update", "state": m["state"], "buffer_paths": []any{}}}, nil))
				}
			case "custom":
				// on_click's callback prints, with no Output widget.
				if c, _ := data["content"].(map[string]any); commID == k.id("button") && c["event"] == "click" {
					k.clicks++
					out = append(out, comm("stream", id, map[string]any{"name": "stdout", "text": fmt.Sprintf("clicked %d\n", k.clicks)}, nil))
				}
			}
		}
		return append(out, comm("status", id, map[string]any{"execution_state": "idle"}, nil))
	}
	return nil
}

// waitFrame waits for a frame of the page that match accepts.
func (k *widgetKernel) waitFrame(what string, match func(map[string]any) bool) map[string]any {
	k.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case f := <-k.frames:
			if match(f) {
				return f
			}
		case <-deadline:
			k.t.Fatalf("the page sent no %s within 20s", what)
			return nil
		}
	}
}

// commData returns a comm frame's msg_type, comm id and data.
func commData(f map[string]any) (string, string, map[string]any) {
	if f["type"] != "comm" {
		return "", "", nil
	}
	content, _ := f["content"].(map[string]any)
	commID, _ := content["comm_id"].(string)
	data, _ := content["data"].(map[string]any)
	msgType, _ := f["msg_type"].(string)
	return msgType, commID, data
}

// bundleLoaded tells whether the page fetched the widgets bundle.
const bundleLoaded = `performance.getEntriesByType('resource').some((e) => e.name.endsWith('/vendor/widgets.js'))`

func TestBrowserWidgetsScripted(t *testing.T) {
	k := newWidgetKernel(t)
	nb, shot, done, gw := richNotebookWrapped(t, "widgets", k.wrap)
	if k.fixture.Version < "8.1" {
		t.Fatalf("widgets.json was made with ipywidgets %s, want 8.1", k.fixture.Version)
	}

	// The page asks for the kernel's widgets when it connects; with none,
	// it does not load the bundle.
	k.waitFrame("comm_info", func(f map[string]any) bool { return f["type"] == "comm_info" && f["target_name"] == "jupyter.widget" })
	var loaded bool
	nb.eval(bundleLoaded, &loaded)
	if loaded {
		t.Errorf("the widgets bundle was fetched before any widget")
	}

	// A slider and an Output widget: the bundle loads, the views show.
	i := nb.run("show slider")
	nb.waitDone(i, "the slider's view", `out.querySelector('.widget-slider .noUi-handle') && out.querySelector('.widget-output') && !out.querySelector('.widget-missing')`, 30*time.Second)
	nb.eval(bundleLoaded, &loaded)
	if !loaded {
		t.Errorf("the widgets bundle is not among the page's resources")
	}
	var view struct {
		Readout, Label string
		Styled         bool
	}
	nb.eval(cellJS(i, `const s = out.querySelector('.widget-slider');
		return {readout: s.querySelector('.widget-readout').textContent, label: s.querySelector('.widget-label').textContent,
			styled: getComputedStyle(s).display === 'flex'};`), &view)
	if view.Readout != "5" || view.Label != "n" || !view.Styled {
		t.Errorf("slider view %+v, want readout 5, label n, styled by widgets.css", view)
	}

	// The arrow key moves it: the page sends the new value, and the
	// Output widget shows what the kernel's observer displayed.
	nb.do("focus the slider", chromedp.Focus(chromedp.CSS(cellSel(i)+" .noUi-handle")))
	nb.do("ArrowRight on the slider", press("ArrowRight", "ArrowRight", 39, 0))
	f := k.waitFrame("the slider's new value", func(f map[string]any) bool {
		msgType, commID, data := commData(f)
		state, _ := data["state"].(map[string]any)
		return msgType == "comm_msg" && commID == k.id("slider") && data["method"] == "update" && state["value"] == float64(6)
	})
	if _, ok := f["id"].(string); !ok {
		t.Errorf("comm frame without an id: %v", f)
	}
	nb.waitFor("the Output widget to show the observer's output", cellJS(i, `const o = out.querySelector('.widget-output');
		return o.innerText.includes('value is 6') && !out.innerText.replace(o.innerText, '').includes('value is');`), 10*time.Second)
	// It saves its outputs back to the kernel, as JupyterLab's does.
	k.waitFrame("the Output widget's outputs", func(f map[string]any) bool {
		msgType, commID, data := commData(f)
		state, _ := data["state"].(map[string]any)
		outs, _ := state["outputs"].([]any)
		return msgType == "comm_msg" && commID == k.id("output") && len(outs) == 1 && strings.Contains(fmt.Sprint(outs[0]), "value is 6")
	})
	nb.waitFor("the readout", cellJS(i, `return out.querySelector('.widget-readout').textContent === '6';`), 5*time.Second)

	// A button with a Font Awesome icon; a click runs the kernel's
	// callback, whose print goes to the button's cell.
	i = nb.run("show button")
	nb.waitDone(i, "the button's view", `out.querySelector('button.jupyter-button')`, 30*time.Second)
	var button struct {
		Text string
		Icon bool
	}
	nb.eval(cellJS(i, `const b = out.querySelector('button.jupyter-button');
		return {text: b.textContent.trim(), icon: !!b.querySelector('i.fa-check')};`), &button)
	if button.Text != "Click me" || !button.Icon {
		t.Errorf("button %+v, want the text Click me and the check icon", button)
	}
	nb.waitFor("Font Awesome's font", `document.fonts.check('900 14px "Font Awesome 5 Free"') && [...document.fonts].some((f) => f.family.includes('Font Awesome') && f.status === 'loaded')`, 10*time.Second)
	nb.do("click the button", chromedp.Click(chromedp.CSS(cellSel(i)+" button.jupyter-button")))
	k.waitFrame("the click", func(f map[string]any) bool {
		msgType, commID, data := commData(f)
		content, _ := data["content"].(map[string]any)
		return msgType == "comm_msg" && commID == k.id("button") && data["method"] == "custom" && content["event"] == "click"
	})
	nb.waitFor("the callback's output in the cell", cellJS(i, `const s = out.querySelector('.output-stream'); return !!s && s.innerText.includes('clicked 1');`), 10*time.Second)
	shot("widgets-live.png")

	// Kernel markup in an HTML widget and an HTML description reaches the
	// page sanitised: no script runs, no handler or style attribute is
	// there (the page reports no CSP violation either: done checks).
	i = nb.run("show html")
	nb.waitDone(i, "the HTML widget", `out.querySelector('.widget-html-content b')`, 30*time.Second)
	var html struct {
		Bold, Label, Link, Rel, Target string
		Script, Handler, Style, Form   int
		Pwned                          bool
	}
	nb.eval(cellJS(i, `const h = out.querySelector('.widget-html');
		const a = h.querySelector('.widget-html-content a');
		return {bold: h.querySelector('.widget-html-content b').textContent, label: h.querySelector('.widget-label i').textContent,
			link: a.getAttribute('href'), rel: a.rel, target: a.target,
			script: h.querySelectorAll('script').length, handler: h.querySelectorAll('[onerror]').length,
			style: h.querySelectorAll('.widget-html-content [style]').length, form: h.querySelectorAll('form, input').length,
			pwned: 'pwned' in window};`), &html)
	if html.Bold != "bold" || html.Label != "html" || html.Link != "page.html" || html.Target != "_blank" || !strings.Contains(html.Rel, "noopener") ||
		html.Script+html.Handler+html.Style+html.Form != 0 || html.Pwned {
		t.Errorf("HTML widget %+v, want bold and label kept, the link in a new tab, no script, handler, style or form", html)
	}

	// A reload: the notebook comes back from local storage, and the page
	// restores the widgets from the kernel (ipywidgets 8's control comm).
	nb.do("reload", chromedp.Navigate(gw.url+"/"))
	nb.waitFor("the app to start again", `window.glassroomReady === true`, 10*time.Second)
	// The page reopens the session by itself.
	k.waitFrame("the control comm", func(f map[string]any) bool {
		msgType, _, _ := commData(f)
		content, _ := f["content"].(map[string]any)
		return msgType == "comm_open" && content["target_name"] == "jupyter.widget.control"
	})
	nb.waitFor("the restored slider", cellJS(0, `const s = out.querySelector('.widget-slider');
		return s && s.querySelector('.widget-readout').textContent === '6' && !out.querySelector('.widget-missing') &&
			out.querySelector('.widget-output').innerText.includes('value is 6');`), 20*time.Second)
	nb.waitFor("the restored button", cellJS(1, `return out.querySelector('button.jupyter-button') && out.innerText.includes('clicked 1');`), 10*time.Second)

	// A kernel restart takes the widgets along: their outputs show the
	// kernel's text for them again.
	nb.do("focus the last cell", chromedp.Click(chromedp.CSS(editorSel(3))))
	nb.next = 3
	nb.run("restart")
	nb.waitFor("the views to go", cellJS(0, `return !out.querySelector('.widget-slider') && !out.querySelector('.widget-output') &&
		[...out.querySelectorAll('.widget-missing')].map((e) => e.textContent).join('|') === "IntSlider(value=5, description='n', max=10)|Output()";`), 10*time.Second)

	done(nil)
}
