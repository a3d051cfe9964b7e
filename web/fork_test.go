package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserForkIntoANewTab: Fork copies the notebook's session into a
// new tab, in real Chromium on a real gateway: the copy has the
// notebook's cells and the kernel's variables, and a change in the copy
// leaves the source's variables as they were.
func TestBrowserForkIntoANewTab(t *testing.T) {
	bin := chromium(t)
	gw := startGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	tabCtx, perr := openTab(t, ctx, bin)
	nb := &notebook{t: t, ctx: tabCtx}
	sessionID := func() string {
		var id string
		nb.eval(`document.querySelector('#session-id').textContent`, &id)
		return id
	}
	nb.do("open the page", chromedp.Navigate(gw.url+"/?token="+browserKey))
	nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
	nb.waitFor("a session", `/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent)`, 60*time.Second)
	source := sessionID()
	i := nb.run("x = 41")
	nb.waitDone(i, "x is set", `true`, 60*time.Second)

	nb.do("Fork", chromedp.Click(chromedp.CSS("#fork-btn")))
	nb.waitFor("the fork's tab, live on a session of its own, with the notebook", `document.querySelector('#tab-bar .tab.active').dataset.tab === 't2' &&
		/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent) &&
		document.querySelector('#session-id').textContent !== `+jsString(source)+` &&
		document.querySelectorAll('#cells > .cell').length === 2`, 90*time.Second)
	if got := nb.cellText(0); got != "x = 41" {
		t.Fatalf("the fork's notebook: cell 0 holds %q", got)
	}
	nb.do("focus the fork's last cell", chromedp.Click(chromedp.CSS(editorSel(1))))
	nb.next = 1
	i = nb.run("x = x + 1\nprint(x)")
	nb.waitDone(i, "the fork has x", `out.innerText.includes('42')`, 60*time.Second)

	nb.do("back to the source's tab", chromedp.Click(chromedp.CSS(`#tab-bar .tab[data-tab="t1"] .tab-title`)))
	nb.waitFor("the source's session", `document.querySelector('#session-id').textContent === `+jsString(source)+` &&
		document.querySelector('#kernel-status').dataset.state === 'idle'`, 60*time.Second)
	n := 0
	nb.eval(`document.querySelectorAll('#cells > .cell').length`, &n)
	nb.do("focus the source's last cell", chromedp.Click(chromedp.CSS(editorSel(n-1))))
	nb.next = n - 1
	i = nb.run("print(x)")
	nb.waitDone(i, "the source's x unchanged", `out.innerText.trim() === '41'`, 60*time.Second)
	if exc, errs := perr.snapshot(); len(exc) > 0 || len(errs) > 0 {
		t.Fatalf("page errors: %s / %s", strings.Join(exc, "; "), strings.Join(errs, "; "))
	}
}
