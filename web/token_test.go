package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserTokenLink: a link with ?token= is a login. With no key saved,
// or the same key, the page takes it silently; with another key saved (a
// key is a tenant), a link must not move the user into the link's tenant
// unasked: the page keeps the saved key, takes the link's key out of the
// address bar, and asks. Only "use the link's key" replaces the saved
// key; keeping it, pressing Escape or leaving the page does not. Real
// Chromium, real gateway, real kernels.
func TestBrowserTokenLink(t *testing.T) {
	bin := chromium(t)
	gw := startGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	tabCtx, perr := openTab(t, ctx, bin)
	nb := &notebook{t: t, ctx: tabCtx}

	type state struct {
		Saved, Input, Location, Active, Message string
		Asking                                  bool
	}
	read := func() state {
		var s state
		nb.eval(`(() => {
			const q = (sel) => document.querySelector(sel), offer = q('#token-offer');
			return {saved: localStorage.getItem('glassroom.token') || '', input: q('#token-input').value,
				location: location.href, active: document.activeElement ? document.activeElement.id : '',
				message: q('#message').hidden ? '' : q('#message').textContent,
				asking: !!offer && !offer.hidden && offer.getBoundingClientRect().height > 0};
		})()`, &s)
		return s
	}
	open := func(path string) state {
		t.Helper()
		nb.do("open "+path, chromedp.Navigate(gw.url+path))
		nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
		s := read()
		if strings.Contains(s.Location, "token") {
			t.Errorf("the key stays in the address bar: %s", s.Location)
		}
		return s
	}
	want := func(what string, s state, saved string, asking bool) {
		t.Helper()
		if s.Saved != saved || s.Input != saved || s.Asking != asking {
			t.Fatalf("%s: saved %q, in use %q, asking %v; want %q and asking %v", what, s.Saved, s.Input, s.Asking, saved, asking)
		}
	}

	want("a first link, nothing saved", open("/?token="+browserKey), browserKey, false)
	want("a link with the saved key", open("/?token="+browserKey), browserKey, false)

	// A link with another key: asked, the saved key in use meanwhile, and
	// "keep" is where the focus is.
	s := open("/?token=" + otherKey + "&x=1#frag")
	want("a link with another key", s, browserKey, true)
	if !strings.HasSuffix(s.Location, "/?x=1#frag") || s.Active != "token-offer-keep" {
		t.Fatalf("asking: location %s, focus on %q", s.Location, s.Active)
	}
	// The page works with the saved key meanwhile: a new session is the
	// saved key's tenant's.
	nb.do("click New session", chromedp.Click(chromedp.CSS("#new-session")))
	nb.waitFor("a session id", `/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent)`, 60*time.Second)
	var id string
	nb.eval(`document.querySelector('#session-id').textContent`, &id)
	for key, code := range map[string]int{browserKey: http.StatusOK, otherKey: http.StatusNotFound} {
		if got := getSession(t, gw.url, key, id); got != code {
			t.Fatalf("session %s made while asking, seen with key %.12s...: %d, want %d", id, key, got, code)
		}
	}
	nb.do("click keep", chromedp.Click(chromedp.CSS("#token-offer-keep")))
	if s = read(); s.Message != "Kept the saved API key" {
		t.Errorf("after keep the page says %q", s.Message)
	}
	want("kept", s, browserKey, false)

	// Escape keeps too; so does leaving the page unanswered.
	want("asked again", open("/?token="+otherKey), browserKey, true)
	nb.do("Escape", pressEscape())
	want("Escape", read(), browserKey, false)
	want("asked again", open("/?token="+otherKey), browserKey, true)
	want("left unanswered", open("/"), browserKey, false)

	// Only "use" replaces the saved key.
	want("asked again", open("/?token="+otherKey), browserKey, true)
	nb.do("click use", chromedp.Click(chromedp.CSS("#token-offer-use")))
	nb.waitFor("the link's key to be saved", fmt.Sprintf(`localStorage.getItem('glassroom.token') === %q`, otherKey), 5*time.Second)
	want("used", read(), otherKey, false)
	want("after a reload", open("/"), otherKey, false)
	want("a link with the key now saved", open("/?token="+otherKey), otherKey, false)

	exceptions, errs := perr.snapshot()
	for _, e := range exceptions {
		t.Errorf("JavaScript exception: %s", e)
	}
	for _, e := range errs {
		t.Errorf("console: %s", e)
	}
}

// getSession is the status of GET /v1/sessions/{id} with key.
func getSession(t *testing.T, base, key, id string) int {
	t.Helper()
	return call(t, http.MethodGet, base+"/v1/sessions/"+id, key, nil)
}
