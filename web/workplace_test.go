package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/glassroom/glassroom/testkit"
)

// TestBrowserBackgroundRunsFindAndAnotherBrowser: the notebook as a place
// to work for a day, in real Chromium on a real gateway.
//   - A tab whose cell runs can be left: another notebook runs meanwhile,
//     and back in the first, the output printed while it was away is there,
//     once each, and the run ends (replayed from the session's stream);
//     also when the tab is left again before its session reopened. A run
//     whose session ended meanwhile is let go, and the page says so.
//   - Ctrl+F in command mode finds in the whole notebook (sources and
//     outputs: "1 of 5"), Enter steps, Replace all changes the sources,
//     Esc closes.
//   - Ctrl+S saves it into the workspace; another browser (its own
//     Chromium, its own storage) opens the session from the sessions panel
//     and finds the notebook's cells and outputs, and its kernel's
//     variables.
func TestBrowserBackgroundRunsFindAndAnotherBrowser(t *testing.T) {
	bin := chromium(t)
	// While list is held, listing the sessions (how a tab reopens its
	// session) waits: a tab can be left again before it reopened.
	list, held := heldBy(t, http.MethodGet, "/v1/sessions", false)
	gw := startGatewayWrapped(t, held)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	tabCtx, perr := openTab(t, ctx, bin)
	nb := &notebook{t: t, ctx: tabCtx}
	sessionID := func(nb *notebook) string {
		var id string
		nb.eval(`document.querySelector('#session-id').textContent`, &id)
		return id
	}
	const loop = "import time\nfor i in range(4): print('tick', i, flush=True); time.sleep(1)"

	nb.do("open the page", chromedp.Navigate(gw.url+"/?token="+browserKey))
	nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
	nb.waitFor("a session", `/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent)`, 60*time.Second)
	first := sessionID(nb)
	nb.next = 0
	nb.run(loop)
	nb.waitFor("the loop to print and run on", cellJS(0, `return c.dataset.status === 'running' && out.innerText.includes('tick 0');`), 60*time.Second)

	// Leave it running: a second notebook from the launcher runs meanwhile.
	nb.do("open the launcher", chromedp.Click(chromedp.CSS("#tab-new")))
	nb.waitFor("the launcher", `!!document.querySelector('#launcher-kernels .launch-kernel[data-kernel="python3"]')`, 10*time.Second)
	nb.do("a new Python notebook", chromedp.Click(chromedp.CSS(`#launcher-kernels .launch-kernel[data-kernel="python3"]`)))
	nb.waitFor("the second tab live with a session of its own", `document.querySelector('#tab-bar .tab.active').dataset.tab === 't2' &&
		/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent) &&
		document.querySelector('#session-id').textContent !== `+jsString(first), 60*time.Second)
	nb.next = 0
	i := nb.run("6 * 7")
	nb.waitDone(i, "42", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '42')`, 60*time.Second)
	// The loop ends while its tab is in the background.
	testkit.Eventually(t, 30*time.Second, func() bool {
		var s struct {
			State string `json:"state"`
		}
		return getJSON(t, gw.url+"/v1/sessions/"+first, &s) == http.StatusOK && s.State == "idle"
	}, "the first session's loop did not end")

	nb.do("back to the first tab", chromedp.Click(chromedp.CSS(`#tab-bar .tab[data-tab="t1"] .tab-title`)))
	nb.waitDone(0, "every tick, once, and the run's end", `document.querySelector('#session-id').textContent === `+jsString(first)+` &&
		out.innerText.includes('tick 3') && out.innerText.split('tick 0').length === 2 && out.innerText.split('tick 2').length === 2`, 30*time.Second)

	// Find in the notebook: the source and the four printed lines.
	// Ctrl+F in command mode (in an editor it searches the cell).
	nb.do("focus the second cell", chromedp.Click(chromedp.CSS(editorSel(1))))
	nb.do("Esc: command mode", pressEscape())
	nb.do("Ctrl+F", press("f", "KeyF", 'F', ctrl))
	nb.waitFor("the find bar, with the keyboard", `!document.querySelector('#find-bar').hidden && document.activeElement === document.querySelector('#find-input')`, 5*time.Second)
	nb.do("type tick", chromedp.SendKeys(chromedp.CSS("#find-input"), "tick"))
	nb.waitFor("1 of 5, in the first cell", `document.querySelector('#find-count').textContent === '1 of 5' &&
		document.querySelector('#cells > .cell[data-index="0"]').classList.contains('find-current')`, 5*time.Second)
	nb.do("Enter", pressEnter(false))
	nb.waitFor("2 of 5", `document.querySelector('#find-count').textContent === '2 of 5'`, 5*time.Second)
	nb.do("Shift+Enter twice", pressEnter(true), pressEnter(true))
	nb.waitFor("5 of 5 (wrapped)", `document.querySelector('#find-count').textContent === '5 of 5'`, 5*time.Second)
	nb.eval(`(() => { const f = document.querySelector('#find-input'); f.value = ''; f.dispatchEvent(new Event('input')); return true; })()`, new(bool))
	nb.do("type range(4)", chromedp.SendKeys(chromedp.CSS("#find-input"), "range(4)"))
	nb.waitFor("1 of 1", `document.querySelector('#find-count').textContent === '1 of 1'`, 5*time.Second)
	nb.do("type the replacement", chromedp.SendKeys(chromedp.CSS("#find-replace"), "range(3)"))
	nb.do("replace all", chromedp.Click(chromedp.CSS("#find-replace-all")))
	nb.waitFor("no match left", `document.querySelector('#find-count').textContent === 'no match'`, 5*time.Second)
	want := strings.Replace(loop, "range(4)", "range(3)", 1)
	nb.waitText(0, want, "Replace all")
	nb.do("Esc", pressEscape())
	nb.waitFor("the bar gone, no cell marked", `document.querySelector('#find-bar').hidden && !document.querySelector('.cell.find-hit, .cell.find-current')`, 5*time.Second)

	// Ctrl+S, then another browser opens the session from the panel.
	nb.do("Ctrl+S", press("s", "KeyS", 'S', ctrl))
	nb.waitFor("the save to be reported", `document.querySelector('#message').textContent === 'Saved notebook.ipynb into the workspace'`, 10*time.Second)

	otherCtx, operr := openTab(t, ctx, bin)
	other := &notebook{t: t, ctx: otherCtx}
	other.do("open the page in another browser", chromedp.Navigate(gw.url+"/?token="+browserKey))
	other.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
	other.waitFor("a session of its own", `/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent)`, 60*time.Second)
	if got := sessionID(other); got == first {
		t.Fatalf("another browser reopened %s on its own: it has no notebook of it", got)
	}
	other.do("open the sessions panel", chromedp.Click(chromedp.CSS("#sessions-toggle")))
	other.waitFor("the first session listed", `!!document.querySelector('#session-list [data-session=`+jsString(first)+`] .session-open')`, 15*time.Second)
	other.do("open it", chromedp.Click(chromedp.CSS(`#session-list [data-session="`+first+`"] .session-open`)))
	other.waitFor("a tab with the notebook saved by the first browser", `document.querySelectorAll('#tab-bar .tab').length === 2 &&
		document.querySelector('#session-id').textContent === `+jsString(first)+` && `+
		cellJS(0, `return out.innerText.includes('tick 3') && c.querySelector('.cm-content').textContent.includes('range(3)');`), 30*time.Second)
	other.next = 1
	j := other.run("i")
	other.waitDone(j, "the loop's variable, 3: the same kernel", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '3')`, 30*time.Second)

	if exceptions, errs := operr.snapshot(); len(exceptions)+len(errs) > 0 {
		t.Fatalf("the other browser's page reported %q %q", exceptions, errs)
	}

	// Back in the first browser: a tab left and left again before its
	// session reopened still gets what its run printed meanwhile.
	second := ""
	nb.eval(`JSON.parse(localStorage.getItem('glassroom.tabs')).tabs.find((t) => t.id === 't2').sessionId`, &second)
	nb.next = 1
	k := nb.run("for j in range(5): print('tock', j, flush=True); time.sleep(1)")
	nb.waitFor("the second loop to print and run on", cellJS(k, `return c.dataset.status === 'running' && out.innerText.includes('tock 0');`), 30*time.Second)
	tab := func(id string) chromedp.Action[chromedp.Void] {
		return chromedp.Click(chromedp.CSS(`#tab-bar .tab[data-tab="` + id + `"] .tab-title`))
	}
	list.hold()
	nb.do("away, back and away again before the session reopened", tab("t2"), tab("t1"), tab("t2"))
	list.open()
	nb.waitFor("the second tab with its session", `document.querySelector('#session-id').textContent === `+jsString(second), 30*time.Second)
	testkit.Eventually(t, 30*time.Second, func() bool {
		var s struct {
			State string `json:"state"`
		}
		return getJSON(t, gw.url+"/v1/sessions/"+first, &s) == http.StatusOK && s.State == "idle"
	}, "the first session's second loop did not end")
	nb.do("back to the first tab", tab("t1"))
	nb.waitDone(k, "every tock, once, and the run's end", `document.querySelector('#session-id').textContent === `+jsString(first)+` &&
		out.innerText.includes('tock 4') && out.innerText.split('tock 0').length === 2`, 30*time.Second)

	// A session that ends while its tab is in the background: back in the
	// tab, its run is let go (not running for ever) and it says so.
	l := nb.run("time.sleep(120)")
	nb.waitFor("the sleep to run", cellJS(l, `return c.dataset.status === 'running';`), 30*time.Second)
	nb.do("away", tab("t2"))
	nb.waitFor("the second tab with its session", `document.querySelector('#session-id').textContent === `+jsString(second), 30*time.Second)
	if st := call(t, http.MethodDelete, gw.url+"/v1/sessions/"+first, browserKey, nil); st != http.StatusNoContent && st != http.StatusOK {
		t.Fatalf("DELETE the first session: %d", st)
	}
	nb.do("back to the first tab", tab("t1"))
	nb.waitFor("a new session, the sleep let go, and a word on it", `/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent) &&
		document.querySelector('#session-id').textContent !== `+jsString(first)+` &&
		document.querySelector('#message').textContent.includes('ended while it was in the background') && `+
		cellJS(l, `return c.dataset.status === 'idle';`), 30*time.Second)

	if exceptions, errs := perr.snapshot(); len(exceptions)+len(errs) > 0 {
		t.Fatalf("the page reported %q %q", exceptions, errs)
	}
}
