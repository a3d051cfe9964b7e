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

	"github.com/glassroom/glassroom/testkit"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/glassroom/glassroom/app"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/web"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	chromiumBin = "/usr/bin/chromium"
	browserKey  = "browser-test-key-0123456789"
	// otherKey is another tenant's key (token_test.go).
	otherKey = "browser-test-other-key-0123456789"
)

// chromium returns the browser binary, or skips (fails in CI) without it.
func chromium(t *testing.T) string {
	t.Helper()
	testkit.RealThing(t, "Chromium")
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
	app *app.App

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
	return startGatewayWrapped(t, nil)
}

// startGatewayWrapped is startGateway with wrap (when not nil) in front of
// the gateway's handler.
func startGatewayWrapped(t *testing.T, wrap func(http.Handler) http.Handler) *server {
	t.Helper()
	return startGatewayWith(t, wrap, sessions.Config{})
}

// startGatewayWith is startGatewayWrapped with the session layer's
// configuration (a warm pool).
func startGatewayWith(t *testing.T, wrap func(http.Handler) http.Handler, scfg sessions.Config) *server {
	t.Helper()
	assets, err := web.Assets()
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), app.Config{Runtime: apptest.Local(t), UI: assets, Sessions: scfg,
		Gateway: gateway.Config{APIKeys: []string{browserKey, otherKey}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	s := &server{hijacked: map[net.Conn]bool{}, app: a}
	handler := a.Gateway.Handler()
	if wrap != nil {
		handler = wrap(handler)
	}
	hs := httptest.NewUnstartedServer(handler) // 127.0.0.1
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
	go func() { _ = a.Run(ctx, nil); close(done) }()
	t.Cleanup(func() {
		s.dropWebSockets()
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		<-done
		_ = a.Close(context.Background(), false)
	})
	return s
}

// openTab starts Chromium (bin) with a fresh profile, for at most ctx's
// life, and opens a tab whose reports go to the returned pageErrors. The
// browser is gone when the test's cleanups have run.
func openTab(t *testing.T, ctx context.Context, bin string) (context.Context, *pageErrors) {
	t.Helper()
	// Nothing but the loopback gateway is ever reached by name.
	return openTabWith(t, ctx, bin, "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
}

// openTabWith is openTab with Chromium's host resolver rules.
func openTabWith(t *testing.T, ctx context.Context, bin, resolverRules string) (context.Context, *pageErrors) {
	t.Helper()
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
		chromedp.Flag("host-resolver-rules", resolverRules),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	allocCtx, allocCancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(allocCancel) // waits for the browser process to exit
	perr := newPageErrors()
	tabCtx, tabCancel := chromedp.NewContext(allocCtx, chromedp.WithListener(perr.listen))
	t.Cleanup(tabCancel)
	return tabCtx, perr
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
	// expected are substrings of network errors the journey causes on
	// purpose (an image the workspace does not have).
	expected []string

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
	case *page.EventJavascriptDialogOpening:
		p.add(&p.exceptions, fmt.Sprintf("a %s dialog opened: %q", ev.Type, ev.Message))
	case *log.EventEntryAdded:
		if ev.Entry.Source == log.EntrySourceNetwork && slices.ContainsFunc(p.expected, func(e string) bool { return strings.Contains(ev.Entry.URL, e) }) {
			return
		}
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
				JSON.stringify([...c.querySelectorAll('.cm-line')].map((l) => l.textContent).join('\n')) + ' -> ' +
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

// press sends one key to the focused element as a keyboard does (keydown,
// keyup), with modifiers, but without a char event: the page handles these
// keys on keydown and cancels them, so a real browser types nothing either.
func press(key, code string, vk int64, mods int64) chromedp.Action[chromedp.Void] {
	// A Ctrl chord goes down as keyDown, as a real keyboard's reaches the
	// page: Chromium (148) takes a rawKeyDown Ctrl+C in a text field as
	// its own copy command, and the page never sees the key.
	down := input.DispatchKeyEventTypeRawKeyDown
	if mods&ctrl != 0 {
		down = input.DispatchKeyEventTypeKeyDown
	}
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{down, input.DispatchKeyEventTypeKeyUp} {
			if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: typ, Key: key, Code: code, Modifiers: mods,
				WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk,
			}); err != nil {
				return err
			}
		}
		return nil
	})
}

const (
	shift = int64(chromedp.ModifierShift)
	ctrl  = int64(chromedp.ModifierCtrl)
)

// pressEnter sends Enter, or Shift+Enter when shift is set.
func pressEnter(withShift bool) chromedp.Action[chromedp.Void] {
	var mods int64
	if withShift {
		mods = shift
	}
	return press("Enter", "Enter", 13, mods)
}

func pressTab(mods int64) chromedp.Action[chromedp.Void] { return press("Tab", "Tab", 9, mods) }
func pressEscape() chromedp.Action[chromedp.Void]        { return press("Escape", "Escape", 27, 0) }

// pressLetter sends a lower-case letter key (command mode, shortcuts).
func pressLetter(r rune, mods int64) chromedp.Action[chromedp.Void] {
	key, upper := string(r), strings.ToUpper(string(r))
	if mods&shift != 0 {
		key = upper // as a keyboard reports it
	}
	return press(key, "Key"+upper, int64(r-'a'+'A'), mods)
}

// editorSel is the CSS selector of cell i's editable content (CodeMirror).
func editorSel(i int) string { return cellSel(i) + " .cm-content" }

// cellText returns the text in cell i's editor.
func (nb *notebook) cellText(i int) string {
	nb.t.Helper()
	var s string
	nb.eval(cellJS(i, "return [...c.querySelectorAll('.cm-line')].map((l) => l.textContent).join('\\n');"), &s)
	return s
}

// waitText waits until cell i's editor holds want (the page handles input
// events after the browser acknowledged them).
func (nb *notebook) waitText(i int, want, after string) {
	nb.t.Helper()
	nb.waitFor(fmt.Sprintf("cell %d to hold %q after %s", i, want, after), cellJS(i, fmt.Sprintf(
		"return [...c.querySelectorAll('.cm-line')].map((l) => l.textContent).join('\\n') === %q;", want)), 5*time.Second)
}

// typeInto types text into cell i's editor, key by key, and checks that the
// editor holds want afterwards.
func (nb *notebook) typeInto(i int, text, want string) {
	nb.t.Helper()
	// A newline is the Enter key alone: SendKeys would add a char event,
	// which types a second newline after the editor handled the key.
	for n, line := range strings.Split(text, "\n") {
		if n > 0 {
			nb.do("Enter in cell "+fmt.Sprint(i), pressEnter(false))
		}
		if line != "" {
			nb.do("type into cell "+fmt.Sprint(i), chromedp.SendKeys(chromedp.CSS(editorSel(i)), line))
		}
	}
	if got := nb.cellText(i); got != want {
		nb.t.Fatalf("cell %d holds %q after typing %q, want %q\n%s", i, got, text, want, nb.diagnose())
	}
}

// run types code into the focused (next) cell, presses Shift+Enter, and
// returns the cell's index. The UI then focuses a new cell below it.
func (nb *notebook) run(code string) int {
	nb.t.Helper()
	i := nb.next
	nb.typeInto(i, code, code)
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
	tabCtx, perr := openTab(t, ctx, bin)
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

	var sessionID string
	step("2 new session", func() {
		nb.do("click New session", chromedp.Click(chromedp.CSS("#new-session")))
		nb.waitFor("a session id", `/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent)`, 60*time.Second)
		nb.eval(`document.querySelector('#session-id').textContent`, &sessionID)
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
		i := nb.run("import matplotlib.pyplot as plt; plt.plot([1,2,3]); plt.savefig('plot.png'); plt.show()")
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

	step("6c display update", func() {
		i := nb.run(`from IPython.display import display; h = display('first', display_id=True); print('between'); h.update('second')`)
		nb.waitDone(i, "the display updated in place", `out.innerText.includes("'second'")`, 30*time.Second)
		var got []string
		nb.eval(cellJS(i, `return [...out.querySelectorAll('.output')].map((o) => o.className.split(' ')[1] + ' ' + o.innerText.trim());`), &got)
		if want := []string{"output-display 'second'", "output-stream between"}; !slices.Equal(got, want) {
			t.Errorf("outputs after update_display: %q, want %q", got, want)
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

	step("12 Tab completion, busy kernel", func() {
		// A running cell keeps the kernel busy: the completion waits for it,
		// the editor says so, and typing goes on meanwhile.
		busy := nb.run("import time; time.sleep(3)")
		nb.waitFor("the sleep to run", cellJS(busy, `return c.dataset.status === 'running';`), 30*time.Second)
		i := nb.next
		nb.typeInto(i, "import collections; collections.Ord", "import collections; collections.Ord")
		nb.waitFor("Python highlighting", cellJS(i, `return [...c.querySelectorAll('.cm-content .tok-keyword')].some((e) => e.textContent === 'import');`), 5*time.Second)
		nb.do("Tab", pressTab(0))
		nb.waitFor("the waiting popup", cellJS(i, `const w = c.querySelector('.assist-waiting');
			return !!w && w.textContent.includes('waiting for the kernel');`), 5*time.Second)
		nb.typeInto(i, "e", "import collections; collections.Orde")
		nb.waitFor("OrderedDict in the completion list", cellJS(i, `
			const l = c.querySelector('.cm-tooltip-autocomplete');
			return !!l && [...l.querySelectorAll('.cm-completionLabel')].some((e) => e.textContent === 'OrderedDict');`), 30*time.Second)
		var waiting bool
		nb.eval(cellJS(i, `return !!c.querySelector('.assist-waiting');`), &waiting)
		if waiting {
			t.Errorf("the waiting popup stayed after the completion list came")
		}
		// Pick it with the mouse, where it is on the screen once placed (the
		// editor positions popups in a later animation frame): the same box
		// twice in a row.
		pick := `[...c.querySelectorAll('.cm-tooltip-autocomplete li')].find((li) =>
			li.querySelector('.cm-completionLabel').textContent === 'OrderedDict')`
		nb.waitFor("the list to settle", cellJS(i, `const li = `+pick+`;
			const r = li && JSON.stringify(li.getBoundingClientRect());
			const same = !!r && c.dataset.testBox === r;
			c.dataset.testBox = r || '';
			return same;`), 10*time.Second)
		var at struct{ X, Y float64 }
		nb.eval(cellJS(i, `const r = (`+pick+`).getBoundingClientRect();
			return {x: r.left + r.width / 2, y: r.top + r.height / 2};`), &at)
		nb.do("click OrderedDict", chromedp.MouseClickXY(at.X, at.Y))
		nb.waitText(i, "import collections; collections.OrderedDict", "clicking OrderedDict")
		nb.do("Shift+Enter", pressEnter(true))
		nb.next = i + 1
		nb.waitDone(i, "the class", `out.innerText.includes('collections.OrderedDict')`, 30*time.Second)
	})

	step("13 Tab completion, keyboard", func() {
		i := nb.next
		nb.typeInto(i, "import os; os.path.joi", "import os; os.path.joi")
		nb.do("Tab", pressTab(0))
		nb.waitFor("join in the completion list", cellJS(i, `
			const s = c.querySelector('.cm-tooltip-autocomplete li[aria-selected] .cm-completionLabel');
			return !!s && s.textContent === 'join';`), 30*time.Second)
		// CodeMirror ignores an Enter within 75 ms of the list opening (it
		// was meant for the line); a person takes longer to read it.
		time.Sleep(150 * time.Millisecond)
		nb.do("Enter picks it", pressEnter(false))
		nb.waitText(i, "import os; os.path.join", "Enter in the completion list")
		// At the start of a line Tab indents instead.
		nb.do("Shift+Enter", pressEnter(true))
		nb.next = i + 1
		nb.waitDone(i, "the function", `out.innerText.includes('function') && out.innerText.includes('join')`, 30*time.Second)
		nb.do("Tab at the start of a line", pressTab(0))
		nb.waitText(nb.next, "    ", "Tab in an empty cell")
		nb.do("Shift+Tab dedents", pressTab(shift))
		nb.waitText(nb.next, "", "Shift+Tab after an indent")
	})

	step("14 Shift+Tab help", func() {
		i := nb.next
		nb.typeInto(i, "len(", "len(")
		nb.do("Shift+Tab", pressTab(shift))
		nb.waitFor("len's docstring", cellJS(i, `const h = c.querySelector('.inspect-tip .inspect-text');
			return !!h && h.textContent.includes('Return the number of items in a container');`), 30*time.Second)
		var help string
		nb.eval(cellJS(i, `return c.querySelector('.inspect-tip .inspect-text').textContent;`), &help)
		if strings.Contains(help, "\x1b") || strings.Contains(help, "[0;") {
			t.Errorf("help shows raw escape codes: %q", help)
		}
		var coloured int
		nb.eval(cellJS(i, `return c.querySelectorAll('.inspect-tip .inspect-text span[class^="ansi-"]').length;`), &coloured)
		if coloured == 0 {
			t.Errorf("help has no ANSI colours: %q", help)
		}
		nb.do("Esc closes the help", pressEscape())
		nb.waitFor("the help to close", cellJS(i, `return !c.querySelector('.inspect-tip');`), 5*time.Second)
		var inEditor bool
		nb.eval(cellJS(i, `return c.querySelector('.cm-content').contains(document.activeElement);`), &inEditor)
		if !inEditor {
			t.Errorf("Esc that closed the help also left the editor")
		}
		nb.typeInto(i, "'abc')", "len('abc')")
		nb.waitFor("the brackets matched", cellJS(i, `return [...c.querySelectorAll('.cm-matchingBracket')].map((e) => e.textContent).join('') === '()';`), 5*time.Second)
		nb.do("Shift+Enter", pressEnter(true))
		nb.next = i + 1
		nb.waitDone(i, "3", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '3')`, 30*time.Second)
	})

	step("15 Markdown cell", func() {
		i := nb.next
		perr.mu.Lock()
		perr.expected = append(perr.expected, "/files/x?") // the <img src=x> below: no such file
		perr.mu.Unlock()
		nb.do("Esc: command mode", pressEscape())
		nb.waitFor("the cell selected", cellJS(i, `return document.activeElement === c && c.classList.contains('active');`), 5*time.Second)
		nb.do("m: Markdown", pressLetter('m', 0))
		nb.waitFor("a Markdown cell", cellJS(i, `return c.classList.contains('cell-markdown') && c.querySelector('.cell-type-select').value === 'markdown';`), 5*time.Second)
		nb.do("Enter: edit", pressEnter(false))
		nb.waitFor("the editor focused", cellJS(i, `return c.querySelector('.cm-content').contains(document.activeElement);`), 5*time.Second)
		src := "# Notes\n\n- first item\n- second item\n\n![plot](plot.png) <img src=x onerror=alert(1)>\n\nMath stays: $x_1 + y_2$"
		nb.typeInto(i, src, src)
		nb.do("Shift+Enter renders", pressEnter(true))
		nb.next = i + 1
		nb.waitFor("the rendered Markdown", cellJS(i, `const v = c.querySelector('.md-view');
			return c.classList.contains('rendered') && !!v.querySelector('h1') && [...v.querySelectorAll('img')].some((img) => img.complete && img.naturalWidth > 0);`), 10*time.Second)
		var md struct {
			H1, Math         string
			Items            []string
			Images           []string
			Handlers, Script int
			Editor           bool
		}
		nb.eval(cellJS(i, `const v = c.querySelector('.md-view');
			return {
				h1: v.querySelector('h1').textContent,
				items: [...v.querySelectorAll('ul > li')].map((li) => li.textContent),
				images: [...v.querySelectorAll('img')].map((img) => img.getAttribute('src') || ''),
				handlers: [...document.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
				script: v.querySelectorAll('script, iframe, style').length,
				math: (v.querySelector('.math') || {}).textContent || '',
				editor: getComputedStyle(c.querySelector('.editor')).display !== 'none',
			};`), &md)
		if md.H1 != "Notes" || !slices.Equal(md.Items, []string{"first item", "second item"}) {
			t.Errorf("rendered heading %q, items %q", md.H1, md.Items)
		}
		if md.Handlers != 0 || md.Script != 0 {
			t.Errorf("the page has %d elements with event handlers, %d script/iframe/style in the Markdown", md.Handlers, md.Script)
		}
		if len(md.Images) != 2 || !strings.Contains(md.Images[0], "/files/plot.png?token=") || !strings.Contains(md.Images[1], "/files/x?token=") {
			t.Errorf("Markdown images: %q, want workspace URLs", md.Images)
		}
		if md.Math != "$x_1 + y_2$" {
			t.Errorf("math: %q, want it as text", md.Math)
		}
		if md.Editor {
			t.Errorf("the editor of a rendered Markdown cell is visible")
		}
		// Markdown output from the kernel goes the same way.
		j := nb.run(`from IPython.display import Markdown; Markdown('**bold** <img src=x onerror=alert(1)> <script>window.pwned=1</script>')`)
		nb.waitDone(j, "rendered Markdown output", `!!out.querySelector('.output-markdown strong')`, 30*time.Second)
		var out struct {
			Strong   string
			Handlers int
			Scripts  int
		}
		nb.eval(cellJS(j, `return {strong: out.querySelector('.output-markdown strong').textContent,
			handlers: out.querySelectorAll('[onerror]').length, scripts: out.querySelectorAll('script').length};`), &out)
		if out.Strong != "bold" || out.Handlers != 0 || out.Scripts != 0 {
			t.Errorf("Markdown output: %+v", out)
		}
		var pwned string
		nb.eval(`typeof window.pwned`, &pwned)
		if pwned != "undefined" {
			t.Errorf("script from Markdown ran")
		}
	})

	step("16 editor: undo, cursors, search", func() {
		i := nb.next
		nb.typeInto(i, "undo_me = 1", "undo_me = 1")
		time.Sleep(700 * time.Millisecond) // a pause starts a new undo step
		// One input event (as a paste or an IME would give), so that a slow
		// machine cannot split it into several undo steps.
		nb.do("insert 234", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: "234"})
			return err
		}))
		nb.waitText(i, "undo_me = 1234", "inserting 234")
		nb.do("Ctrl+Z", pressLetter('z', ctrl))
		nb.waitText(i, "undo_me = 1", "Ctrl+Z")
		nb.do("Ctrl+Shift+Z", pressLetter('z', ctrl|shift))
		nb.waitText(i, "undo_me = 1234", "Ctrl+Shift+Z")
		// Multiple cursors: Ctrl+D adds the next occurrence of the word.
		nb.typeInto(i, "; undo_me", "undo_me = 1234; undo_me")
		nb.do("Ctrl+Home", press("Home", "Home", 36, ctrl))
		nb.do("Ctrl+D twice", pressLetter('d', ctrl), pressLetter('d', ctrl))
		nb.waitFor("two selections", cellJS(i, `return c.querySelectorAll('.cm-selectionBackground').length === 2;`), 5*time.Second)
		nb.typeInto(i, "v", "v = 1234; v")
		// Search: Ctrl+F opens the panel in the cell, Esc closes it.
		nb.do("Ctrl+F", pressLetter('f', ctrl))
		nb.waitFor("the search panel", cellJS(i, `return !!c.querySelector('.cm-panel.cm-search input[name=search]');`), 5*time.Second)
		nb.do("Esc", pressEscape())
		nb.waitFor("the search panel to close", cellJS(i, `return !c.querySelector('.cm-search');`), 5*time.Second)
		nb.do("focus the editor", chromedp.Focus(chromedp.CSS(editorSel(i))))
		nb.do("Shift+Enter", pressEnter(true))
		nb.next = i + 1
		nb.waitDone(i, "1234", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '1234')`, 30*time.Second)
	})

	step("17 command mode", func() {
		i := nb.next
		count := func() (n int) {
			nb.eval(`document.querySelectorAll('#cells > .cell').length`, &n)
			return n
		}
		selected := func() (n int) {
			nb.eval(`(() => { const c = document.activeElement.closest('.cell'); return document.activeElement === c ? +c.dataset.index : -1; })()`, &n)
			return n
		}
		n := count()
		nb.do("Esc", pressEscape())
		if got := selected(); got != i {
			t.Fatalf("after Esc cell %d is selected, want %d", got, i)
		}
		check := func(what string, wantSel, wantCount int) {
			t.Helper()
			if s, c := selected(), count(); s != wantSel || c != wantCount {
				t.Errorf("after %s: cell %d selected of %d, want %d of %d", what, s, c, wantSel, wantCount)
			}
		}
		nb.do("b", pressLetter('b', 0))
		check("b", i+1, n+1)
		nb.do("a", pressLetter('a', 0))
		check("a", i+1, n+2)
		nb.do("k", pressLetter('k', 0))
		check("k", i, n+2)
		nb.do("j", pressLetter('j', 0))
		check("j", i+1, n+2)
		nb.do("ArrowDown", press("ArrowDown", "ArrowDown", 40, 0))
		check("ArrowDown", i+2, n+2)
		nb.do("ArrowUp", press("ArrowUp", "ArrowUp", 38, 0))
		check("ArrowUp", i+1, n+2)
		nb.do("y", pressLetter('m', 0), pressLetter('y', 0))
		var typ string
		nb.eval(cellJS(i+1, `return c.querySelector('.cell-type-select').value;`), &typ)
		if typ != "code" {
			t.Errorf("after m then y the cell is %q", typ)
		}
		nb.do("d d", pressLetter('d', 0), pressLetter('d', 0))
		check("dd", i+1, n+1)
		nb.do("d d", pressLetter('d', 0), pressLetter('d', 0))
		check("dd", i, n)
		nb.do("Enter", pressEnter(false))
		var editing bool
		nb.eval(cellJS(i, `return c.querySelector('.cm-content').contains(document.activeElement);`), &editing)
		if !editing {
			t.Errorf("Enter in command mode did not edit cell %d", i)
		}
	})

	step("18 save .ipynb, reload", func() {
		// The kernel told its language's version (the chooser shows it).
		nb.waitFor("the Python version in the chooser", `/Python 3 \(3\.\d+\.\d+/.test(document.querySelector('#language-select').title)`, 10*time.Second)
		var version string
		nb.eval(`/\((3\.[^)]*)\)/.exec(document.querySelector('#language-select').title)[1]`, &version)
		dir := t.TempDir()
		nb.do("allow downloads", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir,
			})
			return err
		}))
		nb.do("click Save .ipynb", chromedp.Click(chromedp.CSS("#save-ipynb")))
		var file string
		deadline := time.Now().Add(15 * time.Second)
		for file == "" && time.Now().Before(deadline) {
			m, _ := filepath.Glob(filepath.Join(dir, "*.ipynb"))
			if len(m) > 0 {
				file = m[0]
			} else {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if file == "" {
			t.Fatalf("no .ipynb downloaded")
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var saved struct {
			NBFormat int `json:"nbformat"`
			Metadata struct {
				Kernelspec struct {
					Name, Language string
					DisplayName    string `json:"display_name"`
				} `json:"kernelspec"`
				LanguageInfo struct {
					Name, Version, Mimetype string
					FileExtension           string `json:"file_extension"`
				} `json:"language_info"`
			} `json:"metadata"`
			Cells []struct {
				CellType string   `json:"cell_type"`
				Source   []string `json:"source"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(raw, &saved); err != nil {
			t.Fatalf("the saved notebook is not JSON: %v", err)
		}
		types := func(cells []string) string { return strings.Join(cells, ",") }
		var savedTypes []string
		mdSource := ""
		for _, c := range saved.Cells {
			savedTypes = append(savedTypes, c.CellType)
			if c.CellType == "markdown" {
				mdSource = strings.Join(c.Source, "")
			}
		}
		if saved.NBFormat != 4 || !strings.HasPrefix(mdSource, "# Notes\n") {
			t.Fatalf("saved notebook: nbformat %d, Markdown source %q, types %v", saved.NBFormat, mdSource, savedTypes)
		}
		if ks, li := saved.Metadata.Kernelspec, saved.Metadata.LanguageInfo; ks.Name != "python3" || ks.Language != "python" ||
			li.Name != "python" || li.Version != version || li.FileExtension != ".py" || li.Mimetype != "text/x-python" {
			t.Errorf("saved notebook's kernelspec %+v, language_info %+v; want Python %s's", ks, li, version)
		}
		// Reload: the notebook comes back from local storage; then open the
		// saved file over it.
		nb.do("reload", chromedp.Reload())
		nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
		cellTypes := func() []string {
			var got []string
			nb.eval(`[...document.querySelectorAll('#cells > .cell .cell-type-select')].map((s) => s.value)`, &got)
			return got
		}
		if got := cellTypes(); types(got) != types(savedTypes) {
			t.Errorf("after a reload the cell types are %v, want %v", got, savedTypes)
		}
		nb.do("open the saved notebook", chromedp.SetUploadFiles(chromedp.CSS("#open-ipynb"), []string{file}))
		nb.waitFor("the opened notebook", `(() => { const m = document.querySelector('#message'); return !m.hidden && m.textContent.startsWith('Opened '); })()`, 10*time.Second)
		if got := cellTypes(); types(got) != types(savedTypes) {
			t.Errorf("the opened notebook's cell types are %v, want %v", got, savedTypes)
		}
		nb.waitFor("the Markdown cell rendered", `[...document.querySelectorAll('#cells > .cell.cell-markdown.rendered h1')].some((h) => h.textContent === 'Notes')`, 10*time.Second)
		// The page came back to the session it had, by itself.
		nb.waitFor("the last session, reopened", `document.querySelector('#session-id').textContent === `+jsString(sessionID), 30*time.Second)
		nb.waitFor("an idle kernel", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 30*time.Second)
		nb.waitFor("the workspace image in the Markdown again", `[...document.querySelectorAll('#cells > .cell-markdown.rendered img')].some((img) => img.complete && img.naturalWidth > 0)`, 10*time.Second)
	})

	var darkShot func()
	step("19 dark theme", func() {
		var bg [2]string
		read := func() string {
			var s string
			nb.eval(`getComputedStyle(document.body).backgroundColor + ' ' + getComputedStyle(document.querySelector('.cell .editor')).backgroundColor`, &s)
			return s
		}
		bg[0] = read()
		setScheme := func(v string) chromedp.Action[chromedp.Void] {
			return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
				})
				return err
			})
		}
		nb.do("dark system setting", setScheme("dark"))
		bg[1] = read()
		if bg[0] != "rgb(244, 245, 247) rgb(250, 251, 252)" || bg[1] != "rgb(22, 24, 29) rgb(26, 29, 35)" {
			t.Errorf("page and editor backgrounds: light %q, dark %q", bg[0], bg[1])
		}
		nb.do("light system setting", setScheme("light"))
		darkShot = func() {
			nb.do("dark system setting", setScheme("dark"))
			shot("notebook-dark.png")
		}
	})

	// CodeMirror's styles reach the page as a constructed stylesheet: no
	// <style> element (the CSP would block it) and the editor is styled.
	var styled struct {
		StyleElements, Adopted int
		Display                string
	}
	nb.eval(`({styleElements: document.querySelectorAll('style').length, adopted: document.adoptedStyleSheets.length,
		display: getComputedStyle(document.querySelector('.cm-editor')).display})`, &styled)
	if styled.StyleElements != 0 || styled.Adopted == 0 || styled.Display != "flex" {
		t.Errorf("editor styles: %+v, want no <style>, an adopted sheet, a flex .cm-editor", styled)
	}

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
	darkShot()
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
