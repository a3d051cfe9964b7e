package jupyter_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/testkit"
)

// The classic Notebook in a browser: the gateway under a real notebook
// server's front end and widget manager (see clients_test.go for the
// notebook process and the other clients).

// TestNotebookInChromium: Debian's classic Notebook 6.4 with
// --gateway-url=<glassroom>, driven in headless Chromium: a new notebook
// runs a cell that plots with matplotlib, and the image shows; ipywidgets
// (the notebook's widgetsnbextension, comms through the notebook server's
// gateway client): an IntSlider and a Button render, ArrowRight on the
// slider changes the kernel's value, a click runs the callback; after a
// page reload the widget comes back with the kernel's state and still
// responds; the widget manager logs no error.
func TestNotebookInChromium(t *testing.T) {
	bin := chromiumPath(t)
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			app := startJupyterApp(t, "notebook", g.URL, apptest.KeyA)
			// A new, empty notebook, as File → New → Python 3 makes.
			var nb struct{ Path string }
			if st, body := app.call(t, "POST", "/api/contents", map[string]string{"type": "notebook"}, &nb); st != http.StatusCreated {
				t.Fatalf("new notebook: %d %s", st, body)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			opts := append(chromedp.DefaultExecAllocatorOptions[:],
				chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
				chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
				chromedp.Flag("disable-sync", true), chromedp.Flag("no-proxy-server", true),
				chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
				chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000))
			allocCtx, allocCancel := chromedp.NewExecAllocator(ctx, opts...)
			defer allocCancel()
			tab, tabCancel := chromedp.NewContext(allocCtx)
			defer tabCancel()
			page := &classicPage{t: t, ctx: tab}
			page.watchConsole()

			page.run("open the notebook", chromedp.Navigate(app.url+"/notebooks/"+nb.Path+"?token="+app.token))
			page.waitFor("the kernel to be ready", `!!(window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel &&
				Jupyter.notebook.kernel.info_reply && Jupyter.notebook.kernel.info_reply.protocol_version)`, 90*time.Second)
			code := "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9, 16])\nplt.title('glassroom')\nplt.show()"
			page.runCell(0, code)
			page.waitFor("the plot", `(() => {
				const img = document.querySelector('.output_area img[src^="data:image/png;base64,"]');
				return !!img && img.complete && img.naturalWidth > 100 && img.naturalHeight > 100;
			})()`, 90*time.Second)
			var prompt string
			page.eval(`document.querySelector('.input_prompt').innerText`, &prompt)
			if !strings.Contains(prompt, "[1]") {
				t.Fatalf("prompt after the run: %q", prompt)
			}
			// The kernel the notebook uses is a glassroom session.
			sessions, err := g.Client(t, apptest.KeyA).ListSessions(context.Background())
			if err != nil || len(sessions) != 1 {
				t.Fatalf("glassroom sessions: %v %v", sessions, err)
			}
			var kernelID string
			page.eval(`Jupyter.notebook.kernel.id`, &kernelID)
			if strings.ReplaceAll(kernelID, "-", "") != sessions[0].ID {
				t.Fatalf("notebook kernel %s, glassroom session %s", kernelID, sessions[0].ID)
			}

			// ipywidgets through the notebook's widget extension
			// (widgetsnbextension), whose comms the notebook server relays to
			// glassroom: a slider and a button render and drive the kernel.
			page.runCell(1, "import ipywidgets as w\ns = w.IntSlider(value=3)\nb = w.Button(description='go')\n"+
				"n = []\nb.on_click(lambda _: n.append(1))\ndisplay(s, b)")
			page.waitFor("the slider and the button", `(() => {
				const o = document.querySelectorAll('#notebook-container > .cell')[1];
				return !!o.querySelector('.widget-slider .noUi-handle') && !!o.querySelector('button.widget-button') &&
					o.querySelector('.widget-readout').innerText.trim() === '3';
			})()`, 60*time.Second)
			page.slide(1, "4")
			page.runCell(2, "print(s.value)")
			if got := page.cellStream(2); got != "4\n" {
				t.Fatalf("s.value after ArrowRight: %q", got)
			}
			// A click runs the button's callback in the kernel, before the
			// next cell (both go to the kernel in order on its shell channel).
			page.run("click the button", chromedp.Click(chromedp.JSPath(
				`document.querySelectorAll('#notebook-container > .cell')[1].querySelector('button.widget-button')`)))
			page.runCell(3, "print(len(n))")
			if got := page.cellStream(3); got != "1\n" {
				t.Fatalf("len(n) after the click: %q", got)
			}

			// A page reload: the notebook saved (without the widget state),
			// the widget's view comes back from it and its state from the
			// kernel (ipywidgets 8's manager opens a jupyter.widget.control
			// comm and asks request_states, or else comm_info and each
			// widget's request_state), and the widget still responds.
			if ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](`Jupyter.notebook.save_notebook().then(() => true)`, chromedp.EvalAwaitPromise)); err != nil || !ok {
				t.Fatalf("save the notebook: %v %v\n%s", ok, err, page.diagnose())
			}
			// Debian's Notebook 6.4 signs a notebook before nbformat adds
			// its cell ids on writing, so the notebook reopens untrusted
			// (widgets shown as text): trust it, as File → Trust Notebook does.
			if st, body := app.call(t, "POST", "/api/contents/"+nb.Path+"/trust", nil, nil); st != http.StatusCreated {
				t.Fatalf("trust the notebook: %d %s", st, body)
			}
			page.run("reload", chromedp.Evaluate[chromedp.Void](`window.onbeforeunload = null`), chromedp.Reload())
			page.waitFor("the kernel after the reload", `!!(window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel &&
				Jupyter.notebook.kernel.info_reply && Jupyter.notebook.kernel.info_reply.protocol_version)`, 90*time.Second)
			page.waitFor("the slider after the reload", `(() => {
				const o = document.querySelectorAll('#notebook-container > .cell')[1];
				const r = o && o.querySelector('.widget-slider .widget-readout');
				return !!r && r.innerText.trim() === '4' && !!o.querySelector('button.widget-button');
			})()`, 60*time.Second)
			page.slide(1, "5")
			page.runCell(4, "print(s.value, len(n))")
			if got := page.cellStream(4); got != "5 1\n" {
				t.Fatalf("s.value, len(n) after the reload: %q", got)
			}
			// The widget manager logged no error (an idle too many or too
			// few for a widget's message would show as a throttle error).
			for _, line := range page.consoleLines() {
				if widgetTrouble.MatchString(line) {
					t.Errorf("browser console: %s", line)
				}
			}
			if name == "local" {
				page.run("show the widget", chromedp.Evaluate[chromedp.Void](
					`document.querySelectorAll('#notebook-container > .cell')[1].scrollIntoView()`))
				page.screenshot("notebook-jupyter-gateway.png")
			}
		})
	}
}

// slide moves the IntSlider shown in cell i one step right with the
// keyboard (its handle focused, ArrowRight) and waits until its readout
// says want and the update has reached the kernel: a widget counts its
// messages until the kernel's idle for each, so none pending (and none
// buffered) means the kernel has handled them.
func (p *classicPage) slide(i int, want string) {
	p.t.Helper()
	cell := `document.querySelectorAll('#notebook-container > .cell')[` + strconv.Itoa(i) + `]`
	p.run("ArrowRight on the slider", chromedp.Evaluate[chromedp.Void](`window.__glassroomModels = undefined`),
		chromedp.Focus(chromedp.JSPath(cell+`.querySelector('.widget-slider .noUi-handle')`)),
		chromedp.KeyEvent(kb.ArrowRight))
	p.waitFor("the slider at "+want+", synced", `(() => {
		if (`+cell+`.querySelector('.widget-slider .widget-readout').innerText.trim() !== '`+want+`') return false;
		if (!window.__glassroomModels) {
			Promise.all(Object.values(Jupyter.notebook.kernel.widget_manager._models)).then((ms) => { window.__glassroomModels = ms; });
			return false;
		}
		return window.__glassroomModels.every((m) => m._pending_msgs === 0 && !m._msg_buffer);
	})()`, 60*time.Second)
}

// runCell clicks cell i's editor, types code in it (as a paste would) and
// runs it with Shift+Enter, as a user does; it waits for the cell to have
// run (its prompt numbered).
func (p *classicPage) runCell(i int, code string) {
	p.t.Helper()
	cell := `document.querySelectorAll('#notebook-container > .cell')[` + strconv.Itoa(i) + `]`
	p.waitFor("cell "+strconv.Itoa(i), `!!`+cell, 30*time.Second)
	p.run("type cell "+strconv.Itoa(i), chromedp.Click(chromedp.JSPath(cell+`.querySelector('.CodeMirror')`)),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: code})
			return err
		}))
	var text string
	p.eval(`Jupyter.notebook.get_cell(`+strconv.Itoa(i)+`).get_text()`, &text)
	if text != code {
		p.t.Fatalf("cell %d holds %q", i, text)
	}
	p.run("Shift+Enter", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: typ, Key: "Enter", Code: "Enter",
				Modifiers: int64(chromedp.ModifierShift), WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}); err != nil {
				return err
			}
		}
		return nil
	}))
	p.waitFor("cell "+strconv.Itoa(i)+" to run", `typeof Jupyter.notebook.get_cell(`+strconv.Itoa(i)+`).input_prompt_number === 'number'`, 90*time.Second)
}

// cellStream returns the text cell i printed (its stream outputs).
func (p *classicPage) cellStream(i int) string {
	p.t.Helper()
	stream := `Jupyter.notebook.get_cell(` + strconv.Itoa(i) + `).output_area.outputs.filter((o) => o.output_type === 'stream').map((o) => o.text).join('')`
	p.waitFor("cell "+strconv.Itoa(i)+"'s output", stream+` !== ''`, 30*time.Second)
	var text string
	p.eval(stream, &text)
	return text
}

// chromiumPath returns Debian's Chromium, or skips (fails in CI).
func chromiumPath(t *testing.T) string {
	t.Helper()
	testkit.RealThing(t, "Chromium")
	const bin = "/usr/bin/chromium"
	if _, err := os.Stat(bin); err != nil {
		testkit.Unavailable(t, "Chromium: %v (make test-deps)", err)
	}
	return bin
}

// classicPage drives one tab of the classic Notebook.
type classicPage struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	console []string // the tab's console errors and warnings, and exceptions
}

// widgetTrouble matches a console line of the widget manager's or of a
// comm's trouble.
var widgetTrouble = regexp.MustCompile(`(?i)widget|\bcomms?\b|comm_|throttle`)

// watchConsole records the tab's console errors and warnings and its
// uncaught exceptions (consoleLines, and diagnose on failure).
func (p *classicPage) watchConsole() {
	p.t.Helper()
	err := chromedp.Listen(p.ctx, func(ev any) {
		var line string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeWarning {
				return
			}
			line = string(ev.Type) + ":"
			for _, a := range ev.Args {
				line += " " + string(a.Value) + a.Description
			}
		case *runtime.EventExceptionThrown:
			line = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				line += " " + ev.ExceptionDetails.Exception.Description
			}
		default:
			return
		}
		p.mu.Lock()
		p.console = append(p.console, line)
		p.mu.Unlock()
	})
	if err != nil {
		p.t.Fatalf("listen to the console: %v", err)
	}
}

func (p *classicPage) consoleLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.console)
}

func (p *classicPage) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v\n%s", what, err, p.diagnose())
	}
}

func (p *classicPage) eval(expr string, out any) {
	p.t.Helper()
	raw, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]byte](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v\n%s", expr, err, p.diagnose())
	}
	if err := json.Unmarshal(raw, out); err != nil {
		p.t.Fatalf("evaluate %s: decode %s: %v", expr, raw, err)
	}
}

func (p *classicPage) waitFor(what, predicate string, d time.Duration) {
	p.t.Helper()
	_, err := chromedp.Run(p.ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(d)))
	if err != nil {
		p.t.Fatalf("waiting for %s: %v\n%s", what, err, p.diagnose())
	}
}

func (p *classicPage) diagnose() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const k = window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel;
		return 'url: ' + location.href + '\nkernel: ' + (k ? k.id + ' ' + JSON.stringify(k.info_reply || {}).slice(0, 200) : 'none') +
			'\ntrusted: ' + (window.Jupyter && Jupyter.notebook && Jupyter.notebook.trusted) +
			'\nindicator: ' + ((document.querySelector('#kernel_indicator_icon') || {}).className || '') +
			'\nnotification: ' + ((document.querySelector('#notification_kernel') || {}).innerText || '') +
			'\ncells: ' + [...document.querySelectorAll('.cell')].map((c) => c.innerText).join('\n---\n');
	})()`))
	if err != nil {
		s = "(no page state: " + err.Error() + ")"
	}
	return s + "\nconsole:\n" + strings.Join(p.consoleLines(), "\n")
}

func (p *classicPage) screenshot(name string) {
	buf, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Errorf("screenshot: %v", err)
		return
	}
	root, _ := filepath.Abs("..")
	dir := filepath.Join(root, "artifacts")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err == nil {
			p.t.Logf("saved %s", filepath.Join(dir, name))
		}
	}
}
