package web_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/glassroom/glassroom/testkit"
)

// TestBrowserNotebookHome: the page as a place to work, in real Chromium
// on a real gateway. From the URL `make run` prints, the first notebook
// runs `1 + 1` with no click; the launcher (screenshot) opens a second
// notebook in a tab of its own with a session of its own (screenshot of
// the two tabs); switching tabs brings each notebook back with its
// session; a reload finds both notebooks with their outputs; the
// sessions panel ends the second one's session; the key box gives way to
// an account menu once a key is saved.
func TestBrowserNotebookHome(t *testing.T) {
	bin := chromium(t)
	gw := startGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	tabCtx, perr := openTab(t, ctx, bin)
	nb := &notebook{t: t, ctx: tabCtx}
	sessionID := func() string {
		var id string
		nb.eval(`document.querySelector('#session-id').textContent`, &id)
		return id
	}
	result := func(want string) string {
		return `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === ` + jsString(want) + `)`
	}
	tabsAre := func(n int) string {
		return `document.querySelectorAll('#tab-bar .tab').length === ` + strconv.Itoa(n)
	}

	nb.do("open the page", chromedp.Navigate(gw.url+"/?token="+browserKey))
	nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
	// The key box gives way to the account menu once a key is saved.
	var key struct{ Form, Account bool }
	nb.eval(`({form: !document.querySelector('#token-form').hidden, account: !document.querySelector('#account-box').hidden})`, &key)
	if key.Form || !key.Account {
		t.Fatalf("with a key saved: key box shown %v, account menu shown %v", key.Form, key.Account)
	}
	nb.do("type 1 + 1", chromedp.KeyEvent("1 + 1"))
	nb.do("Shift+Enter", pressEnter(true))
	nb.waitDone(0, "2", result("2"), 60*time.Second)
	first := sessionID()

	// The launcher: a notebook per installed kernel, a terminal, upload.
	nb.do("open the launcher", chromedp.Click(chromedp.CSS("#tab-new")))
	nb.waitFor("the launcher's kernels", `!document.querySelector('#launcher').hidden &&
		!!document.querySelector('#launcher-kernels .launch-kernel[data-kernel="python3"]')`, 10*time.Second)
	shotTo(t, nb, "notebook-launcher.png")
	nb.do("a new Python notebook", chromedp.Click(chromedp.CSS(`#launcher-kernels .launch-kernel[data-kernel="python3"]`)))
	nb.waitFor("two tabs, the second live, the launcher gone", tabsAre(2)+` && document.querySelector('#tab-bar .tab.active').dataset.tab === 't2' &&
		document.querySelector('#launcher').hidden`, 10*time.Second)
	nb.waitFor("a session of its own", `/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent) &&
		document.querySelector('#session-id').textContent !== `+jsString(first), 60*time.Second)
	second := sessionID()
	nb.next = 0
	i := nb.run("y = 2 + 3\ny")
	nb.waitDone(i, "5", result("5"), 60*time.Second)
	shotTo(t, nb, "notebook-two-tabs.png")

	// Back to the first: its cells, its output, its session.
	nb.do("switch to the first tab", chromedp.Click(chromedp.CSS(`#tab-bar .tab[data-tab="t1"] .tab-title`)))
	nb.waitFor("the first notebook with its session", `document.querySelector('#session-id').textContent === `+jsString(first)+` && `+
		cellJS(0, `return `+result("2")+`;`), 30*time.Second)

	// A reload finds both notebooks with their outputs.
	nb.do("reload", chromedp.Reload())
	nb.waitFor("the app to start again", `window.glassroomReady === true`, 10*time.Second)
	nb.waitFor("both tabs, the first live, its session and output", tabsAre(2)+` && document.querySelector('#tab-bar .tab.active').dataset.tab === 't1' &&
		document.querySelector('#session-id').textContent === `+jsString(first)+` && `+cellJS(0, `return `+result("2")+`;`), 30*time.Second)
	nb.do("switch to the second tab", chromedp.Click(chromedp.CSS(`#tab-bar .tab[data-tab="t2"] .tab-title`)))
	nb.waitFor("the second notebook with its session and output", `document.querySelector('#session-id').textContent === `+jsString(second)+` && `+
		cellJS(0, `return `+result("5")+`;`), 30*time.Second)
	nb.waitFor("the kernel idle", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 30*time.Second)
	nb.next = 1
	x := nb.run("y * 2")
	nb.waitDone(x, "10: the second session's variable", result("10"), 30*time.Second)

	// The sessions panel ends the second notebook's session (from the first tab).
	nb.do("switch to the first tab", chromedp.Click(chromedp.CSS(`#tab-bar .tab[data-tab="t1"] .tab-title`)))
	nb.waitFor("the first session", `document.querySelector('#session-id').textContent === `+jsString(first), 30*time.Second)
	perr.mu.Lock() // memory asked for just before the end is answered 404
	perr.expected = append(perr.expected, "/v1/sessions/"+second+"/metrics")
	perr.mu.Unlock()
	nb.do("open the sessions panel", chromedp.Click(chromedp.CSS("#sessions-toggle")))
	nb.waitFor("the second session in the panel", `!!document.querySelector('#session-list [data-session=`+jsString(second)+`] .session-end')`, 15*time.Second)
	nb.do("end it", chromedp.Click(chromedp.CSS(`#session-list [data-session="`+second+`"] .session-end`)))
	nb.waitFor("it leaves the panel", `!document.querySelector('#session-list [data-session=`+jsString(second)+`]')`, 15*time.Second)
	// The row leaves at once; the DELETE answers a moment later.
	testkit.Eventually(t, 15*time.Second, func() bool {
		var gone struct{}
		return getJSON(t, gw.url+"/v1/sessions/"+second, &gone) == http.StatusNotFound
	}, "the session ended from the panel is still there")
	// The account menu: change the key (the box comes back), then keep it.
	nb.do("open the account menu", chromedp.Click(chromedp.CSS("#account-btn")))
	nb.do("change key", chromedp.Click(chromedp.CSS("#account-change")))
	nb.waitFor("the key box", `!document.querySelector('#token-form').hidden && document.activeElement === document.querySelector('#token-input')`, 5*time.Second)
	nb.do("save the same key", chromedp.Click(chromedp.CSS("#token-save")))
	nb.waitFor("the menu again, the session kept", `document.querySelector('#token-form').hidden && !document.querySelector('#account-box').hidden &&
		document.querySelector('#session-id').textContent === `+jsString(first), 5*time.Second)

	exceptions, errs := perr.snapshot()
	if len(exceptions)+len(errs) > 0 {
		t.Fatalf("the page reported %q %q", exceptions, errs)
	}
}
