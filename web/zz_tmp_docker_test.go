package web_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/glassroom/glassroom/app"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/web"
	"github.com/rs/zerolog"
)

func startDockerGateway(t *testing.T) *server {
	assets, _ := web.Assets()
	a, err := app.New(context.Background(), app.Config{Runtime: apptest.Docker(t, 371000), UI: assets,
		Gateway: gateway.Config{APIKeys: []string{browserKey, otherKey}}}, zerolog.New(os.Stderr).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	s := &server{hijacked: map[net.Conn]bool{}}
	hs := httptest.NewUnstartedServer(a.Gateway.Handler())
	hs.Config.ConnState = func(c net.Conn, st http.ConnState) {}
	hs.Start()
	s.url = hs.URL
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx, nil); close(done) }()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		<-done
		_ = a.Close(context.Background(), false)
	})
	return s
}

func TestTmpDockerLanguages(t *testing.T) {
	bin := chromium(t)
	gw := startDockerGateway(t)
	t.Log(requireKernels(t, gw, "r", "typescript"))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	tabCtx, perr := openTab(t, ctx, bin)
	nb := &notebook{t: t, ctx: tabCtx}
	nb.do("open the page", chromedp.Navigate(gw.url+"/?token="+browserKey))
	nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
	nb.waitFor("langs", `document.querySelectorAll('#language-select option').length >= 3`, 10*time.Second)
	nb.chooseLanguage("r")
	nb.do("click New session", chromedp.Click(chromedp.CSS("#new-session")))
	nb.waitFor("session or msg", `document.querySelector('#kernel-status').dataset.state === 'idle' || (!document.querySelector('#message').hidden && !document.querySelector('#message').textContent.startsWith('Code'))`, 180*time.Second)
	t.Log(nb.diagnose())
	nb.waitFor("an idle kernel", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 60*time.Second)
	r := nb.run("plot(1:10)")
	nb.waitDone(r, "a decoded PNG plot",
		`[...out.querySelectorAll('.output-display img')].some((img) => img.complete && img.naturalWidth > 0 && img.src.startsWith('data:image/png;base64,'))`,
		120*time.Second)
	t.Log(nb.prompt(r), nb.outputText(r))
	comp := nb.next
	nb.typeInto(comp, "plo", "plo")
	nb.do("Tab", pressTab(0))
	nb.waitFor("R's plot in the completion list", cellJS(comp, `
		const l = c.querySelector('.cm-tooltip-autocomplete');
		return !!l && [...l.querySelectorAll('.cm-completionLabel')].some((e) => e.textContent === 'plot');`), 30*time.Second)
	nb.do("Esc closes the list", pressEscape())
	nb.waitFor("the list to close", cellJS(comp, `return !c.querySelector('.cm-tooltip-autocomplete');`), 5*time.Second)
	nb.do("Ctrl+A, Backspace", pressLetter('a', ctrl), press("Backspace", "Backspace", 8, 0))
	nb.waitText(comp, "", "clearing the cell")
	_, saved := nb.saveIpynb()
	t.Logf("%+v", saved.Metadata)
	nb.chooseLanguage("typescript")
	nb.do("click New session", chromedp.Click(chromedp.CSS("#new-session")))
	nb.waitFor("an idle kernel", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 60*time.Second)
	ts := nb.run("function add(a: number, b: number): number { return a + b }; add(40, 2)")
	nb.waitDone(ts, "42 as the result", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '42')`, 120*time.Second)
	t.Log(nb.prompt(ts), nb.outputText(ts))
	_, saved = nb.saveIpynb()
	t.Logf("%+v", saved.Metadata)
	buf, _ := chromedp.Run(tabCtx, chromedp.FullScreenshot(100))
	_ = os.WriteFile("/tmp/webui-shot.png", buf, 0o644)
	e, es := perr.snapshot()
	t.Log(e, es)
}
