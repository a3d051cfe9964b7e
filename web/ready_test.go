package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// TestBrowserReadyOnOpen: the URL `make run` prints (the key in it) opens a
// notebook whose kernel starts without a click, and the first cell has the
// keyboard: typing `1 + 1` and Shift+Enter, and nothing else, gives 2.
//   - A cell run before the kernel is ready waits for it and says so (the
//     gateway here holds session creation until the test has seen that).
//   - A reload brings back the same session, the cell and its output.
//   - With a warm pool, page load to the first result is measured (logged).
func TestBrowserReadyOnOpen(t *testing.T) {
	bin := chromium(t)
	// Session creation is held until the test has seen the cell queued.
	creation, held := heldBy(t, http.MethodPost, "/v1/sessions", true)
	slow := startGatewayWrapped(t, held)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)

	tabCtx, perr := openTab(t, ctx, bin)
	nb := &notebook{t: t, ctx: tabCtx}
	nb.do("open the page", chromedp.Navigate(slow.url+"/?token="+browserKey))
	nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
	var focused bool
	nb.eval(cellJS(0, `return c.contains(document.activeElement);`), &focused)
	if !focused {
		t.Fatalf("the first cell does not have the keyboard on open\n%s", nb.diagnose())
	}
	nb.do("type 1 + 1 where the focus is", chromedp.KeyEvent("1 + 1"))
	nb.do("Shift+Enter", pressEnter(true))
	var early struct {
		Status, Message, Badge string
		Session                string
	}
	nb.eval(`({status: document.querySelector('#cells > .cell[data-index="0"]').dataset.status,
		message: document.querySelector('#message').textContent,
		badge: document.querySelector('#kernel-status').dataset.state,
		session: document.querySelector('#session-id').textContent})`, &early)
	if early.Session != "none" || early.Status != "queued" || !strings.Contains(early.Message, "kernel is starting") || early.Badge != "starting" {
		t.Fatalf("a cell run before the kernel is ready: %+v, want it queued with a word on the kernel starting", early)
	}
	creation.open()
	nb.waitDone(0, "2 as the result", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '2')`, 60*time.Second)
	var id string
	nb.eval(`document.querySelector('#session-id').textContent`, &id)

	// Ctrl+S writes the notebook into the workspace, cells and outputs.
	nb.do("Ctrl+S", press("s", "KeyS", 'S', ctrl))
	nb.waitFor("the save to be reported", `document.querySelector('#message').textContent === 'Saved notebook.ipynb into the workspace'`, 10*time.Second)
	var saved struct {
		NBFormat int `json:"nbformat"`
		Cells    []struct {
			Source  any `json:"source"`
			Outputs []struct {
				Data map[string]any `json:"data"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if st := getJSON(t, slow.url+"/v1/sessions/"+id+"/files/notebook.ipynb", &saved); st != http.StatusOK {
		t.Fatalf("GET notebook.ipynb from the workspace: %d", st)
	}
	if saved.NBFormat != 4 || len(saved.Cells) < 1 || nbText(saved.Cells[0].Source) != "1 + 1" || len(saved.Cells[0].Outputs) != 1 ||
		nbText(saved.Cells[0].Outputs[0].Data["text/plain"]) != "2" {
		t.Fatalf("the workspace's notebook.ipynb: %+v", saved)
	}

	// A reload: the same session, the cell and its output.
	nb.do("reload", chromedp.Reload())
	nb.waitFor("the app to start again", `window.glassroomReady === true`, 10*time.Second)
	nb.waitFor("the same session, reopened", `document.querySelector('#session-id').textContent === `+jsString(id), 30*time.Second)
	nb.waitFor("the cell and its output", cellJS(0, `return c.querySelector('.cm-content').textContent === '1 + 1' &&
		[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '2');`), 10*time.Second)
	// The sessions panel: this key's live sessions, refreshed by itself;
	// one ended from there.
	other := createSession(t, slow.url)
	// Memory in use is asked per session while the panel shows: one asked
	// just before the session ends is answered 404.
	perr.mu.Lock()
	perr.expected = append(perr.expected, "/v1/sessions/"+other+"/metrics")
	perr.mu.Unlock()
	nb.do("open the sessions panel", chromedp.Click(chromedp.CSS("#sessions-toggle")))
	row := func(id string) string { return `document.querySelector('#session-list [data-session="` + id + `"]')` }
	nb.waitFor("both sessions in the panel", row(id)+` && `+row(other)+` && `+row(id)+`.classList.contains('current')`, 15*time.Second)
	shotTo(t, nb, "notebook-sessions-panel.png")
	nb.do("end the other session from the panel", chromedp.Click(chromedp.CSS(`#session-list [data-session="`+other+`"] .session-end`)))
	nb.waitFor("the ended session to leave the panel", `!`+row(other), 15*time.Second)
	// The row leaves at once; the DELETE answers a moment later.
	testkit.Eventually(t, 15*time.Second, func() bool {
		var gone struct{}
		return getJSON(t, slow.url+"/v1/sessions/"+other, &gone) == http.StatusNotFound
	}, "the session ended from the panel is still there")

	// Clear outputs, then Restart & run all: the counts start again.
	nb.do("clear outputs", chromedp.Click(chromedp.CSS("#clear-outputs")))
	nb.waitFor("no outputs", cellJS(0, `return out.childElementCount === 0 && c.querySelector('.exec-count').textContent === '[ ]';`), 5*time.Second)
	nb.do("restart and run all", chromedp.Click(chromedp.CSS("#restart-run-all")))
	nb.waitDone(0, "2 again, as the restarted kernel's first", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '2') &&
		c.querySelector('.exec-count').textContent === '[1]'`, 60*time.Second)

	// The running cell, brought into view.
	nb.do("focus cell 1", chromedp.Click(chromedp.CSS(editorSel(1))))
	nb.next = 1
	sleeper := nb.run("import time; time.sleep(4)")
	nb.waitFor("the cell to run", cellJS(sleeper, `return c.dataset.status === 'running';`), 30*time.Second)
	nb.do("scroll to the running cell", chromedp.Click(chromedp.CSS("#scroll-running")))
	nb.waitFor("the running cell selected", cellJS(sleeper, `return document.activeElement === c;`), 5*time.Second)

	// The files panel opens a .ipynb of the workspace as the notebook.
	nb.waitDone(sleeper, "the sleep to end", `true`, 30*time.Second)
	nb.do("save", press("s", "KeyS", 'S', ctrl))
	nb.waitFor("the save", `document.querySelector('#message').textContent === 'Saved notebook.ipynb into the workspace'`, 10*time.Second)
	nb.do("clear outputs", chromedp.Click(chromedp.CSS("#clear-outputs")))
	nb.waitFor("the notebook in the files panel", `!!document.querySelector('#file-list [data-path="notebook.ipynb"] .file-name')`, 15*time.Second)
	nb.do("open it from the files panel", chromedp.Click(chromedp.CSS(`#file-list [data-path="notebook.ipynb"] .file-name`)))
	nb.waitFor("the opened notebook, outputs back", `document.querySelector('#message').textContent.startsWith('Opened notebook.ipynb') && `+
		cellJS(0, `return [...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '2');`), 10*time.Second)

	exceptions, errs := perr.snapshot()
	if len(exceptions)+len(errs) > 0 {
		t.Fatalf("the page reported %q %q", exceptions, errs)
	}

	// The first minute with a warm pool: page load to the result of 1 + 1.
	fast := startGatewayWith(t, nil, sessions.Config{Pool: 1})
	testkit.Eventually(t, 60*time.Second, func() bool { return fast.app.Manager.Pool().Ready >= 1 }, "the warm pool never filled")
	tab2, _ := openTab(t, ctx, bin)
	nb2 := &notebook{t: t, ctx: tab2}
	start := time.Now()
	nb2.do("open the page", chromedp.Navigate(fast.url+"/?token="+browserKey))
	nb2.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
	loaded := time.Since(start)
	nb2.do("type 1 + 1", chromedp.KeyEvent("1 + 1"))
	nb2.do("Shift+Enter", pressEnter(true))
	nb2.waitDone(0, "2 as the result", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '2')`, 60*time.Second)
	t.Logf("with a warm pool: page loaded in %v, the result of 1 + 1 (typed at once) %v after the navigation began",
		loaded.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// getJSON GETs url with the browser tests' key and decodes the answer into
// out; it returns the status.
func getJSON(t *testing.T, url string, out any) int {
	t.Helper()
	return call(t, http.MethodGet, url, browserKey, out)
}

// call sends a bodiless request to url with key and, when it answers 200
// and out is not nil, decodes the answer into out; it returns the status.
func call(t *testing.T, method, url, key string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("decode %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

// gate holds requests while it is shut, until it is opened: the page is
// seen while it waits for them, however long the test takes to look (a
// fixed delay lost that race on a loaded machine). The zero gate is open.
type gate struct {
	mu   sync.Mutex
	shut chan struct{} // closed when the gate opens; nil while open
}

// hold shuts the gate: requests from now on wait for open.
func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut == nil {
		g.shut = make(chan struct{})
	}
}

// open lets the held requests and the later ones through.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}

func (g *gate) wait(ctx context.Context) {
	g.mu.Lock()
	shut := g.shut
	g.mu.Unlock()
	if shut != nil {
		select {
		case <-shut:
		case <-ctx.Done():
		}
	}
}

// heldBy holds the requests of method on path at g (shut from the start
// when held is true); the test's end opens it.
func heldBy(t *testing.T, method, path string, held bool) (*gate, func(http.Handler) http.Handler) {
	g := &gate{}
	if held {
		g.hold()
	}
	t.Cleanup(g.open)
	return g, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == method && r.URL.Path == path {
				g.wait(r.Context())
			}
			next.ServeHTTP(w, r)
		})
	}
}

// nbText is an nbformat multiline string: a string, or a list of lines.
func nbText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, l := range v {
			fmt.Fprint(&b, l)
		}
		return b.String()
	}
	return fmt.Sprint(v)
}

// createSession creates a session with the browser tests' key through the
// API and returns its id.
func createSession(t *testing.T, base string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/sessions", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+browserKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ ID string }
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&s) != nil || s.ID == "" {
		t.Fatalf("create a session: %d", resp.StatusCode)
	}
	return s.ID
}

// shotTo saves a screenshot of the page under artifacts/.
func shotTo(t *testing.T, nb *notebook, name string) {
	t.Helper()
	buf, err := chromedp.Run(nb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	dir, err := filepath.Abs(filepath.Join("..", "artifacts"))
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name), buf, 0o644)
	}
	if err != nil {
		t.Errorf("save %s: %v", name, err)
		return
	}
	t.Logf("saved %s", filepath.Join(dir, name))
}
