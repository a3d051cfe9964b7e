package web_test

// The browser test drives the real notebook UI in Debian's headless Chromium
// against a real gateway over real (bubblewrap) kernels, the way a person
// would use it: type code, press Shift+Enter, upload a file, answer input(),
// interrupt a loop. Every step asserts on the DOM.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/kernel/local"
	"github.com/glassroom/glassroom/kernel/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/web"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	chromiumBin = "/usr/bin/chromium"
	browserKey  = "browser-test-key-0123456789"
)

// chromium returns the browser binary, or skips (fails in CI) without it.
func chromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumBin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Chromium is required in CI: %v (run `make test-deps`)", err)
		}
		t.Skipf("\n\n*** SKIPPING BROWSER TEST: %v ***\n*** run `make test-deps` to install chromium ***\n\n", err)
	}
	return chromiumBin
}

// server is a gateway on a loopback listener.
type server struct {
	url string

	mu       sync.Mutex
	hijacked map[net.Conn]bool // WebSocket connections
}

// dropWebSockets cuts every WebSocket connection, as a network failure
// would, and returns how many there were.
func (s *server) dropWebSockets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.hijacked)
	for c := range s.hijacked {
		c.Close()
		delete(s.hijacked, c)
	}
	return n
}

// startGateway serves the embedded UI and the API over a real local runtime
// on a loopback listener.
func startGateway(t *testing.T) *server {
	t.Helper()
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711) // sandbox uids must traverse to their state dirs
	}
	rt, err := local.New(local.Config{Common: sandbox.Common{StateDir: dir, UIDBase: 370000}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	assets, err := web.Assets()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.New(gateway.Config{APIKeys: []string{browserKey}}, mgr, assets, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	s := &server{hijacked: map[net.Conn]bool{}}
	hs := httptest.NewUnstartedServer(srv.Handler()) // 127.0.0.1
	hs.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateHijacked {
			s.mu.Lock()
			s.hijacked[c] = true
			s.mu.Unlock()
		}
	}
	hs.Start()
	s.url = hs.URL
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { mgr.Run(ctx); close(done) }()
	t.Cleanup(func() {
		s.dropWebSockets()
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		<-done
		mgr.Close(context.Background())
	})
	return s
}

// Probes: an exception, a console error and an inline script that the test
// raises in the page itself, to prove that the listener sees each kind of
// report, so that finding none from the UI means something.
const (
	probeException = "glassroom-probe-exception"
	probeConsole   = "glassroom-probe-console"
	probeScript    = "window.glassroomInlineProbe = 1;"
)

// pageErrors collects what the page reported that a clean UI never does:
// uncaught exceptions, console errors and warnings, and browser log errors
// (CSP violations among them).
type pageErrors struct {
	mu         sync.Mutex
	exceptions []string
	errors     []string

	probes []string      // substrings of the probes' reports not seen yet
	probed chan struct{} // closed when every probe was seen
}

func newPageErrors() *pageErrors {
	sum := sha256.Sum256([]byte(probeScript))
	return &pageErrors{
		// A CSP report names the blocked inline script by its hash.
		probes: []string{probeException, probeConsole, "sha256-" + base64.StdEncoding.EncodeToString(sum[:])},
		probed: make(chan struct{}),
	}
}

// add records msg unless it reports a probe. Called with mu held.
func (p *pageErrors) add(list *[]string, msg string) {
	for i, pr := range p.probes {
		if strings.Contains(msg, pr) {
			p.probes = slices.Delete(p.probes, i, i+1)
			if len(p.probes) == 0 {
				close(p.probed)
			}
			return
		}
	}
	*list = append(*list, msg)
}

// listen runs in the tab's event loop: it must return fast.
func (p *pageErrors) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		p.add(&p.exceptions, fmt.Sprintf("%s (%s:%d:%d)", msg, d.URL, d.LineNumber+1, d.ColumnNumber+1))
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			p.add(&p.errors, fmt.Sprintf("[%s] %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			var parts []string
			for _, a := range ev.Args {
				if a.Value != nil {
					parts = append(parts, string(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			p.add(&p.errors, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " ")))
		}
	}
}

func (p *pageErrors) snapshot() (exceptions, errs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.exceptions...), append([]string(nil), p.errors...)
}

// notebook drives one tab of the UI.
type notebook struct {
	t    *testing.T
	ctx  context.Context
	next int // index of the cell that has the focus (the next to type into)
}

func (nb *notebook) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	nb.t.Helper()
	if err := chromedp.Do(nb.ctx, actions...); err != nil {
		nb.t.Fatalf("%s: %v\n%s", what, err, nb.diagnose())
	}
}

// eval evaluates a JavaScript expression and decodes its value into out.
func (nb *notebook) eval(expr string, out any) {
	nb.t.Helper()
	raw, err := chromedp.Run(nb.ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		nb.t.Fatalf("evaluate %s: %v\n%s", expr, err, nb.diagnose())
	}
	if err := json.Unmarshal(raw, out); err != nil {
		nb.t.Fatalf("evaluate %s: decode %s: %v", expr, raw, err)
	}
}

// waitFor polls a JavaScript predicate until it is truthy, for at most d.
func (nb *notebook) waitFor(what, predicate string, d time.Duration) {
	nb.t.Helper()
	_, err := chromedp.Run(nb.ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(d)))
	if err != nil {
		if errors.Is(err, chromedp.ErrPollingTimeout) {
			err = fmt.Errorf("not within %v", d)
		}
		nb.t.Fatalf("waiting for %s: %v\n%s", what, err, nb.diagnose())
	}
}

// diagnose describes the page for a failure message. It must not fail.
func (nb *notebook) diagnose() string {
	ctx, cancel := context.WithTimeout(nb.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const q = (s) => document.querySelector(s);
		const lines = ['page state:',
			'  session: ' + q('#session-id').textContent,
			'  kernel: ' + q('#kernel-status').dataset.state,
			'  message: ' + (q('#message').hidden ? '' : q('#message').textContent),
			'  files: ' + q('#file-list').innerText.replace(/\s+/g, ' ')];
		document.querySelectorAll('#cells > .cell').forEach((c) => {
			lines.push('  cell ' + c.dataset.index + ' [' + c.dataset.status + '] ' +
				JSON.stringify(c.querySelector('textarea').value) + ' -> ' +
				JSON.stringify(c.querySelector('.outputs').innerText));
		});
		return lines.join('\n');
	})()`))
	if err != nil {
		return "(no page state: " + err.Error() + ")"
	}
	return s
}

// srcdocContent waits until an about:srcdoc frame (an HTML output) has
// loaded and returns its readyState and body HTML, read through the frame's
// own DevTools target: Chromium runs sandboxed frames out of process.
func (nb *notebook) srcdocContent(d time.Duration) string {
	nb.t.Helper()
	ctx, cancel := context.WithTimeout(nb.ctx, d)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := "no about:srcdoc frame"
	for {
		infos, err := chromedp.Targets(ctx)
		if err != nil {
			last = err.Error()
		}
		for _, in := range infos {
			if in.Type != "iframe" || in.URL != "about:srcdoc" {
				continue
			}
			fctx, fcancel := chromedp.NewContext(ctx, chromedp.WithTargetID(in.TargetID), chromedp.WithDetachOnCancel())
			v, err := chromedp.Run(fctx, chromedp.Evaluate[string](`document.readyState + ' ' + document.body.innerHTML`))
			fcancel()
			if err != nil {
				last = err.Error()
			} else if last = v; strings.HasPrefix(v, "complete ") {
				return v
			}
		}
		select {
		case <-ctx.Done():
			nb.t.Fatalf("waiting for the HTML frame to load: %s\n%s", last, nb.diagnose())
		case <-tick.C:
		}
	}
}

// cellSel is the CSS selector of cell i.
func cellSel(i int) string { return fmt.Sprintf(`#cells > .cell[data-index="%d"]`, i) }

// cellJS wraps body in a function that has c (the cell element) and out (its
// outputs element), and is false while the cell does not exist.
func cellJS(i int, body string) string {
	return fmt.Sprintf(`(() => {
		const c = document.querySelector(%q);
		if (!c) return false;
		const out = c.querySelector('.outputs');
		%s
	})()`, cellSel(i), body)
}

// pressEnter sends the Enter key (with Shift when shift is set) as a
// keyboard does, but without the char event: the page handles Enter on
// keydown and cancels it, so a real browser inserts no newline either.
func pressEnter(shift bool) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		var mods int64
		if shift {
			mods = int64(chromedp.ModifierShift)
		}
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: typ, Key: "Enter", Code: "Enter", Modifiers: mods,
				WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13,
			}); err != nil {
				return err
			}
		}
		return nil
	})
}

// run types code into the focused (next) cell, presses Shift+Enter, and
// returns the cell's index. The UI then focuses a new cell below it.
func (nb *notebook) run(code string) int {
	nb.t.Helper()
	i := nb.next
	ta := chromedp.CSS(cellSel(i) + " textarea.code")
	nb.do("type into cell "+fmt.Sprint(i), chromedp.SendKeys(ta, code))
	var typed string
	nb.eval(fmt.Sprintf(`document.querySelector(%q).value`, string(ta)), &typed)
	if typed != code {
		nb.t.Fatalf("cell %d holds %q after typing %q", i, typed, code)
	}
	nb.do("Shift+Enter in cell "+fmt.Sprint(i), pressEnter(true))
	// Shift+Enter submits the cell and adds a new one below it, which gets
	// the focus (an input() box of the cell may take it later).
	nb.waitFor(fmt.Sprintf("cell %d to run and advance", i),
		fmt.Sprintf(`document.querySelector(%q) !== null`, cellSel(i+1)), 10*time.Second)
	nb.next = i + 1
	return i
}

// waitDone waits until cell i ran to the end and its outputs satisfy cond
// (a JavaScript expression over c and out).
func (nb *notebook) waitDone(i int, what, cond string, d time.Duration) {
	nb.t.Helper()
	nb.waitFor(fmt.Sprintf("cell %d: %s", i, what), cellJS(i, `
		if (c.dataset.status !== 'idle' || !/^\[\d+\]$/.test(c.querySelector('.exec-count').textContent)) return false;
		return !!(`+cond+`);`), d)
}

func (nb *notebook) outputText(i int) string {
	nb.t.Helper()
	var s string
	nb.eval(cellJS(i, `return out.innerText;`), &s)
	return s
}

func TestBrowserNotebook(t *testing.T) {
	bin := chromium(t)
	gw := startGateway(t)
	base := gw.url

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-proxy-server", true),
		// Nothing but the loopback gateway is ever reached by name.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	allocCtx, allocCancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(allocCancel) // waits for the browser process to exit
	perr := newPageErrors()
	tabCtx, tabCancel := chromedp.NewContext(allocCtx, chromedp.WithListener(perr.listen))
	t.Cleanup(tabCancel)
	nb := &notebook{t: t, ctx: tabCtx}

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	shot := func(name string) {
		buf, err := chromedp.Run(tabCtx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Errorf("screenshot: %v", err)
			return
		}
		dir := filepath.Join(root, "artifacts")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("saved %s", filepath.Join(dir, name))
	}
	t.Cleanup(func() { // runs before the tab closes
		if t.Failed() && ctx.Err() == nil {
			shot("notebook-failed.png")
		}
	})

	start := time.Now()
	last := start
	step := func(name string, f func()) {
		t.Helper()
		f()
		now := time.Now()
		t.Logf("%-28s %6.2fs", name, now.Sub(last).Seconds())
		last = now
	}

	step("1 open page", func() {
		resp, err := chromedp.Run(tabCtx, chromedp.NavigateResponse(base+"/?token="+browserKey))
		if err != nil {
			t.Fatalf("navigate: %v", err)
		}
		if resp.Status != 200 {
			t.Fatalf("GET / status %d", resp.Status)
		}
		csp := ""
		for k, v := range resp.Headers {
			if strings.EqualFold(k, "Content-Security-Policy") {
				csp = fmt.Sprint(v)
			}
		}
		checkCSP(t, csp)
		nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
		var loc string
		nb.eval(`location.href`, &loc)
		if strings.Contains(loc, browserKey) {
			t.Errorf("the API key stays in the address bar: %s", loc)
		}
		nb.waitFor("the key to be saved", `document.querySelector('#token-state').textContent === 'saved'`, 5*time.Second)
		// The browser enforces the policy: an injected inline script does
		// not run (and is reported).
		var ran string
		nb.eval(fmt.Sprintf(`(() => {
			const s = document.createElement('script');
			s.textContent = %q;
			document.head.appendChild(s);
			s.remove();
			return typeof window.glassroomInlineProbe;
		})()`, probeScript), &ran)
		if ran != "undefined" {
			t.Errorf("an inline script ran despite the CSP")
		}
		nb.do("raise probes", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`setTimeout(() => { throw new Error(%q); }, 0); console.error(%q);`, probeException, probeConsole)))
		select {
		case <-perr.probed:
		case <-time.After(10 * time.Second):
			perr.mu.Lock()
			missing := slices.Clone(perr.probes)
			perr.mu.Unlock()
			exc, errs := perr.snapshot()
			t.Fatalf("probes not reported to the listener: %q (reports: %q %q)", missing, exc, errs)
		}
	})

	step("2 new session", func() {
		nb.do("click New session", chromedp.Click(chromedp.CSS("#new-session")))
		nb.waitFor("a session id", `/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent)`, 60*time.Second)
		nb.waitFor("an idle kernel", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 30*time.Second)
		nb.waitFor("the empty file list", `!!document.querySelector('#file-list .file-empty, #file-list .file-entry')`, 10*time.Second)
	})

	step("3 state across cells", func() {
		i := nb.run("x = 41")
		nb.waitDone(i, "x = 41 to finish", `out.innerText.trim() === ''`, 30*time.Second)
		i = nb.run("x + 1")
		nb.waitDone(i, "42 as the result", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '42')`, 30*time.Second)
		var count string
		nb.eval(cellJS(i, `return c.querySelector('.exec-count').textContent;`), &count)
		if count != "[2]" {
			t.Errorf("execution count of the second cell: %q, want [2]", count)
		}
	})

	step("4 matplotlib image", func() {
		i := nb.run("import matplotlib.pyplot as plt; plt.plot([1,2,3]); plt.show()")
		nb.waitDone(i, "a decoded plot image",
			`[...out.querySelectorAll('.output-display img')].some((img) => img.complete && img.naturalWidth > 0 && img.src.startsWith('data:image/png;base64,'))`,
			90*time.Second)
		if s := nb.outputText(i); strings.Contains(s, "Error") {
			t.Errorf("plot cell shows an error: %q", s)
		}
	})

	step("5 traceback", func() {
		i := nb.run("1/0")
		nb.waitDone(i, "ZeroDivisionError", `out.querySelector('.output-error') && out.querySelector('.output-error .traceback')`, 30*time.Second)
		var got struct{ Name, Traceback string }
		nb.eval(cellJS(i, `return {name: out.querySelector('.error-name').textContent, traceback: out.querySelector('.traceback').textContent};`), &got)
		if got.Name != "ZeroDivisionError" || !strings.Contains(got.Traceback, "ZeroDivisionError") {
			t.Errorf("error output: %+v", got)
		}
		if strings.Contains(got.Traceback, "\x1b") || strings.Contains(got.Traceback, "[0;") {
			t.Errorf("traceback shows raw escape codes: %q", got.Traceback)
		}
	})

	step("6 ANSI colour", func() {
		i := nb.run(`print('\x1b[31mred')`)
		nb.waitDone(i, "red stdout", `out.querySelector('.output-stream.stdout')`, 30*time.Second)
		var got struct {
			Text  string
			Spans []struct{ Class, Text, Color string }
		}
		nb.eval(cellJS(i, `const s = out.querySelector('.output-stream.stdout');
			return {text: s.textContent, spans: [...s.querySelectorAll('span')].map((e) =>
				({class: e.className, text: e.textContent, color: getComputedStyle(e).color}))};`), &got)
		if strings.TrimSpace(got.Text) != "red" || strings.Contains(got.Text, "\x1b") || strings.Contains(got.Text, "[31m") {
			t.Errorf("stdout text %q, want just red", got.Text)
		}
		coloured := false
		for _, s := range got.Spans {
			if strings.Contains(s.Class, "ansi-fg-1") && strings.TrimSpace(s.Text) == "red" && s.Color == "rgb(231, 92, 88)" {
				coloured = true
			}
		}
		if !coloured {
			t.Errorf("no red span in the stdout: %+v", got.Spans)
		}
	})

	step("6b clear_output", func() {
		i := nb.run(`from IPython.display import clear_output; print('gone'); clear_output(); print('kept 1'); clear_output(wait=True); print('kept 2')`)
		nb.waitDone(i, "only the output after the last clear", `out.innerText.includes('kept 2')`, 30*time.Second)
		if s := strings.TrimSpace(nb.outputText(i)); s != "kept 2" {
			t.Errorf("output after clear_output: %q, want %q", s, "kept 2")
		}
	})

	step("7 sandboxed HTML", func() {
		i := nb.run(`from IPython.display import HTML, display; display(HTML('<script>window.parent.pwned=1; window.top.pwned=1</script><b>hi</b>'))`)
		nb.waitDone(i, "an HTML frame", `out.querySelector('.output-display iframe')`, 30*time.Second)
		// The frame is a separate (sandboxed, opaque-origin) document: read
		// it through its own DevTools target. Once it has parsed <b>hi</b>,
		// the <script> before it had its chance to run.
		if got := nb.srcdocContent(10 * time.Second); got != "complete <b>hi</b>" {
			t.Errorf("HTML frame content %q, want %q", got, "complete <b>hi</b>")
		}
		var frame struct {
			Sandbox              *string
			Srcdoc               string
			Count                int
			Pwned, TopPwned      string
			AllFrames, Sandboxed int
		}
		nb.eval(cellJS(i, `const f = out.querySelector('.output-display iframe');
			return {
				sandbox: f.getAttribute('sandbox'),
				srcdoc: f.srcdoc,
				count: out.querySelectorAll('iframe').length,
				pwned: typeof window.pwned,
				topPwned: typeof window.top.pwned,
				allFrames: document.querySelectorAll('iframe').length,
				sandboxed: document.querySelectorAll('iframe[sandbox]').length,
			};`), &frame)
		if frame.Pwned != "undefined" || frame.TopPwned != "undefined" {
			t.Errorf("script in kernel HTML reached the page: typeof window.pwned = %q, window.top.pwned = %q", frame.Pwned, frame.TopPwned)
		}
		if frame.Sandbox == nil {
			t.Fatalf("HTML output frame has no sandbox attribute")
		}
		for _, tok := range strings.Fields(strings.ToLower(*frame.Sandbox)) {
			if tok == "allow-scripts" || tok == "allow-same-origin" {
				t.Errorf("HTML frame sandbox=%q allows %s", *frame.Sandbox, tok)
			}
		}
		if !strings.Contains(frame.Srcdoc, "<b>hi</b>") || frame.Count != 1 {
			t.Errorf("HTML frame: %+v", frame)
		}
		if frame.AllFrames != frame.Sandboxed {
			t.Errorf("%d iframes, only %d sandboxed", frame.AllFrames, frame.Sandboxed)
		}
	})

	step("8 upload and read a file", func() {
		const name, content = "hello-upload.txt", "uploaded through the browser 8d3f"
		local := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(local, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		nb.do("choose the file", chromedp.SetUploadFiles(chromedp.CSS("#file-input"), []string{local}))
		nb.waitFor("the file in the list", fmt.Sprintf(`(() => {
			const e = document.querySelector('#file-list .file-entry[data-path=%q]');
			return e && e.querySelector('.file-name').textContent === %q && /\d/.test(e.querySelector('.file-size').textContent);
		})()`, name, name), 30*time.Second)
		i := nb.run(fmt.Sprintf("print(open(%q).read())", name))
		nb.waitDone(i, "the file's content", fmt.Sprintf(`out.innerText.includes(%q)`, content), 30*time.Second)
	})

	step("9 input()", func() {
		i := nb.run("print('hi', input('who?'))")
		field := chromedp.CSS(cellSel(i) + " .input-request input")
		nb.do("wait for the input box", chromedp.WaitVisible(field))
		var prompt string
		nb.eval(cellJS(i, `return out.querySelector('.input-request .input-prompt').textContent;`), &prompt)
		if prompt != "who?" {
			t.Errorf("input prompt %q, want who?", prompt)
		}
		nb.do("answer input()", chromedp.SendKeys(field, "glassroom"), pressEnter(false))
		nb.waitDone(i, "the answer echoed", `out.querySelector('.output-stream.stdout') &&
			out.querySelector('.output-stream.stdout').textContent.includes('hi glassroom') &&
			out.querySelector('.input-request.answered .input-echo').textContent === 'glassroom'`, 30*time.Second)
	})

	step("10 interrupt", func() {
		i := nb.run("while True: pass")
		nb.waitFor("the loop to run", cellJS(i, `return c.dataset.status === 'running';`), 30*time.Second)
		nb.waitFor("a busy kernel", `document.querySelector('#kernel-status').dataset.state === 'busy'`, 10*time.Second)
		// A cell run meanwhile waits its turn, and runs after the interrupt.
		j := nb.run("x * 2")
		nb.waitFor("the next cell to queue", cellJS(j, `return c.dataset.status === 'queued' &&
			c.querySelector('.elapsed').textContent.startsWith('queued');`), 10*time.Second)
		var loop string
		nb.eval(cellJS(i, `return c.dataset.status;`), &loop)
		if loop != "running" {
			t.Fatalf("the loop's cell is %q while another waits", loop)
		}
		nb.do("click Interrupt", chromedp.Click(chromedp.CSS("#interrupt-btn")))
		nb.waitDone(i, "KeyboardInterrupt", `out.innerText.includes('KeyboardInterrupt')`, 30*time.Second)
		// The kernel is usable again, with its state.
		nb.waitDone(j, "82 after the interrupt", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '82')`, 30*time.Second)
		nb.waitFor("an idle kernel", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 30*time.Second)
		var tb string
		nb.eval(cellJS(i, `const e = out.querySelector('.output-error .error-name'); return e ? e.textContent : '';`), &tb)
		if tb != "KeyboardInterrupt" {
			t.Errorf("interrupted cell's error: %q", tb)
		}
	})

	step("11 reconnect", func() {
		// Output produced while the WebSocket is down arrives after the
		// page reconnects: nothing lost, nothing twice, and the cell ends.
		i := nb.run(`for k in range(8): print('tick', k, flush=True); __import__('time').sleep(0.25)`)
		nb.waitFor("the first ticks", cellJS(i, `return out.innerText.includes('tick 1');`), 30*time.Second)
		if n := gw.dropWebSockets(); n != 1 {
			t.Fatalf("dropped %d WebSockets, want 1", n)
		}
		nb.waitFor("the page to notice", `document.querySelector('#kernel-status').dataset.state === 'disconnected'`, 10*time.Second)
		nb.waitDone(i, "every tick once", `out.innerText.includes('tick 7')`, 30*time.Second)
		var want strings.Builder
		for k := range 8 {
			fmt.Fprintf(&want, "tick %d\n", k)
		}
		if got := nb.outputText(i); strings.TrimSpace(got) != strings.TrimSpace(want.String()) {
			t.Errorf("output across a reconnect:\n%s\nwant:\n%s", got, want.String())
		}
		nb.waitFor("an idle kernel", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 30*time.Second)
	})

	t.Logf("%-28s %6.2fs", "journey", time.Since(start).Seconds())

	exceptions, errs := perr.snapshot()
	for _, e := range exceptions {
		t.Errorf("JavaScript exception: %s", e)
	}
	for _, e := range errs {
		t.Errorf("console: %s", e)
	}
	// The notebook scrolls inside the page: make the viewport tall enough to
	// show all of it, so that the screenshot has the whole journey.
	var height int64
	nb.eval(`Math.ceil(document.querySelector('.layout').getBoundingClientRect().top +
		Math.max(document.querySelector('#notebook').scrollHeight, document.querySelector('#files-panel').scrollHeight))`, &height)
	nb.do("resize for the screenshot", chromedp.EmulateViewport(1280, max(height, 1000)),
		chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur()`))
	shot("notebook.png")
}

// checkCSP asserts that the policy forbids inline script.
func checkCSP(t *testing.T, csp string) {
	t.Helper()
	if csp == "" {
		t.Fatal("the page has no Content-Security-Policy header")
	}
	directives := map[string][]string{}
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(strings.ToLower(d))
		if len(f) > 0 {
			directives[f[0]] = f[1:]
		}
	}
	src, ok := directives["script-src"]
	if !ok {
		src, ok = directives["default-src"]
	}
	if !ok {
		t.Fatalf("CSP %q has neither script-src nor default-src", csp)
	}
	for _, s := range src {
		if s == "'unsafe-inline'" || s == "'unsafe-eval'" || s == "*" || s == "data:" || strings.HasPrefix(s, "'nonce-") || strings.HasPrefix(s, "'sha") {
			t.Errorf("CSP script sources %v allow inline or injected script (%s)", src, s)
		}
	}
}
