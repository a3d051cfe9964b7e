package web_test

// Browser tests of the structured results and the terminal, in Debian's
// headless Chromium against a real gateway over real (bubblewrap) kernels:
// a chart drawn as SVG whose points show their values under the pointer, a
// DataFrame as a table that sorts on a click, and a shell in the session's
// sandbox through xterm.js.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// richNotebook opens the notebook in a fresh browser against a fresh
// gateway, with a new session whose kernel is idle. shot saves a screenshot
// to the artifacts directory (as the notebook test does); done fails the
// test on any JavaScript exception or console error the page reported,
// then saves the screenshot name.
func richNotebook(t *testing.T, name string) (nb *notebook, shot func(string), done func(before func())) {
	t.Helper()
	nb, shot, done, _ = richNotebookWrapped(t, name, nil)
	return nb, shot, done
}

// richNotebookWrapped is richNotebook with wrap in front of the gateway's
// handler (startGatewayWrapped); it also returns the gateway.
func richNotebookWrapped(t *testing.T, name string, wrap func(http.Handler) http.Handler) (nb *notebook, shot func(string), done func(before func()), gw *server) {
	t.Helper()
	bin := chromium(t)
	gw = startGatewayWrapped(t, wrap)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	tabCtx, perr := openTab(t, ctx, bin)
	nb = &notebook{t: t, ctx: tabCtx}
	shot = func(file string) { shotTo(t, nb, file) }
	t.Cleanup(func() { // runs before the tab closes
		if t.Failed() && ctx.Err() == nil {
			shot(name + "-failed.png")
		}
	})
	resp, err := chromedp.Run(tabCtx, chromedp.NavigateResponse(gw.url+"/?token="+browserKey))
	if err != nil {
		t.Fatalf("navigate: %v", err)
	}
	if resp.Status != 200 {
		t.Fatalf("GET / status %d", resp.Status)
	}
	nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
	nb.do("click New session", chromedp.Click(chromedp.CSS("#new-session")))
	nb.waitFor("a session id", `/^[A-Za-z0-9_-]{16,}$/.test(document.querySelector('#session-id').textContent)`, 60*time.Second)
	nb.waitFor("an idle kernel", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 30*time.Second)
	done = func(before func()) {
		t.Helper()
		exceptions, errs := perr.snapshot()
		for _, e := range exceptions {
			t.Errorf("JavaScript exception: %s", e)
		}
		for _, e := range errs {
			t.Errorf("console: %s", e)
		}
		// The notebook scrolls inside the page: make the viewport tall
		// enough to show all of it.
		var height int64
		nb.eval(`Math.ceil(document.querySelector('.layout').getBoundingClientRect().top +
			document.querySelector('#notebook').scrollHeight + (document.querySelector('#terminal-panel').hidden ? 0 : document.querySelector('#terminal-panel').getBoundingClientRect().height))`, &height)
		nb.do("resize for the screenshot", chromedp.EmulateViewport(1280, max(height, 1000)))
		if before != nil {
			before()
		}
		shot(name + ".png")
	}
	return nb, shot, done, gw
}

// hover moves the mouse, as a person would, to the middle of the element
// that selector (a JavaScript expression giving an Element) finds, after
// scrolling it into view.
func (nb *notebook) hover(what, selector string) {
	nb.t.Helper()
	var at struct{ X, Y float64 }
	nb.eval(`(() => {
		const e = `+selector+`;
		e.scrollIntoView({block: 'center', inline: 'center'});
		const r = e.getBoundingClientRect();
		return {x: r.left + r.width / 2, y: r.top + r.height / 2};
	})()`, &at)
	nb.do("move the mouse to "+what, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at.X, at.Y))
}

// chartCell is Python that draws a matplotlib line chart and shows it as
// the kernel does once it describes figures: the PNG beside the chart's
// JSON (application/vnd.glassroom.chart+json) in one display_data bundle.
// typ is the chart's type.
func chartCell(typ string) string {
	return `import io, base64, matplotlib.pyplot as plt; from IPython.display import display; f, a = plt.subplots(); a.plot([1, 2, 3], [1, 4, 9]); b = io.BytesIO(); f.savefig(b, format='png'); plt.close(f); ` +
		`display({'application/vnd.glassroom.chart+json': {'type': '` + typ + `', 'title': 'squares', 'x_label': 'n', 'y_label': 'n squared', 'elements': [{'label': 'sq', 'points': [[1, 1], [2, 4], [3, 9]]}]}, 'image/png': base64.b64encode(b.getvalue()).decode(), 'text/plain': '<Figure>'}, raw=True)`
}

func TestBrowserChartsAndTables(t *testing.T) {
	nb, _, done := richNotebook(t, "charts")

	// A line chart: SVG with a marker per point; hovering one shows its value.
	i := nb.run(chartCell("line"))
	nb.waitDone(i, "an SVG line chart", `out.querySelector('.output-rich svg.chart-svg.chart-type-line circle.chart-point')`, 90*time.Second)
	// The PNG behind its tab is loaded all the same (the notebook test's
	// plot step finds it there once the kernel sends charts).
	nb.waitFor("the hidden PNG to load", cellJS(i, `return [...out.querySelectorAll('.output-display img')].some((img) => img.complete && img.naturalWidth > 0 && img.src.startsWith('data:image/png;base64,'));`), 10*time.Second)
	var chart struct {
		Points   []string
		Title    string
		Tip      bool
		ImgShown bool
	}
	nb.eval(cellJS(i, `const v = out.querySelector('.chart-view');
		return {points: [...v.querySelectorAll('circle.chart-point')].map((c) => c.dataset.tip),
			title: v.querySelector('.chart-title').textContent, tip: !v.querySelector('.chart-tip').hidden,
			imgShown: !!out.querySelector('.rich-plain img') && !out.querySelector('.rich-plain').hidden};`), &chart)
	if want := "sq: 1, 1|sq: 2, 4|sq: 3, 9"; strings.Join(chart.Points, "|") != want || chart.Title != "squares" || chart.Tip || chart.ImgShown {
		t.Errorf("chart before hovering: %+v, want points %q, title squares, no tooltip, the PNG behind its tab", chart, want)
	}
	point := fmt.Sprintf(`document.querySelector(%q)`, cellSel(i)+` circle.chart-point[data-tip="sq: 2, 4"]`)
	nb.hover("the point (2, 4)", point)
	nb.waitFor("the tooltip of (2, 4)", cellJS(i, `const tip = out.querySelector('.chart-tip');
		return !tip.hidden && tip.textContent === 'sq: 2, 4' && tip.getBoundingClientRect().width > 0 &&
			out.querySelector('circle.chart-point.hot').dataset.tip === 'sq: 2, 4';`), 5*time.Second)
	nb.hover("the point (3, 9)", fmt.Sprintf(`document.querySelector(%q)`, cellSel(i)+` circle.chart-point[data-tip="sq: 3, 9"]`))
	nb.waitFor("the tooltip of (3, 9)", cellJS(i, `return out.querySelector('.chart-tip').textContent === 'sq: 3, 9';`), 5*time.Second)

	// The PNG is a click away, and back.
	nb.do("click Image", chromedp.Click(chromedp.CSS(cellSel(i)+` .rich-tab[data-view="plain"]`)))
	nb.waitFor("the PNG instead of the chart", cellJS(i, `const img = out.querySelector('.rich-plain img');
		return img && img.complete && img.naturalWidth > 0 && img.getBoundingClientRect().width > 0 &&
			out.querySelector('.chart-view').getBoundingClientRect().width === 0;`), 10*time.Second)
	nb.do("click Chart", chromedp.Click(chromedp.CSS(cellSel(i)+` .rich-tab[data-view="rich"]`)))
	nb.waitFor("the chart again", cellJS(i, `return out.querySelector('.chart-view').getBoundingClientRect().width > 0 &&
		out.querySelector('.rich-plain').hidden;`), 5*time.Second)

	// A type the page does not draw: the PNG alone.
	i = nb.run(chartCell("unknown"))
	nb.waitDone(i, "the PNG alone", `[...out.querySelectorAll('.output-display img')].some((img) => img.complete && img.naturalWidth > 0)`, 60*time.Second)
	var unknown struct{ SVG, Tabs int }
	nb.eval(cellJS(i, `return {svg: out.querySelectorAll('svg').length, tabs: out.querySelectorAll('.rich-tab').length};`), &unknown)
	if unknown.SVG != 0 || unknown.Tabs != 0 {
		t.Errorf("an unknown chart type shows %+v, want the PNG alone", unknown)
	}

	// A DataFrame: a table whose headers sort it, numbers numerically, nulls last.
	i = nb.run(`import pandas as pd; from IPython.display import display; d = {'name': ['b', 'a', 'd', 'c'], 'n': [10, 9, 100, None]}; ` +
		`display({'application/vnd.glassroom.dataframe+json': {'columns': ['name', 'n'], 'index': {'name': None, 'values': [0, 1, 2, 3]}, 'data': d, 'dtypes': {'name': 'object', 'n': 'float64'}, 'total_rows': 10, 'total_columns': 2, 'truncated': True, 'note': 'first 4 of 10 rows'}, 'text/html': pd.DataFrame(d).to_html(), 'text/plain': str(pd.DataFrame(d))}, raw=True)`)
	nb.waitDone(i, "a table", `out.querySelector('.output-rich table.df-table tbody tr')`, 60*time.Second)
	names := func() string {
		var s string
		nb.eval(cellJS(i, `return [...out.querySelectorAll('.df-table tbody tr')].map((r) => r.children[1].textContent + '=' + r.children[2].textContent).join(' ');`), &s)
		return s
	}
	if got, want := names(), "b=10 a=9 d=100 c=NaN"; got != want {
		t.Errorf("table rows %q, want %q", got, want)
	}
	var foot string
	nb.eval(cellJS(i, `return out.querySelector('.df-foot').textContent;`), &foot)
	if !strings.Contains(foot, "first 4 of 10 rows") {
		t.Errorf("table note %q, want the truncation note", foot)
	}
	header := cellSel(i) + ` .df-table thead th:nth-child(3) button`
	nb.do("click the n header", chromedp.Click(chromedp.CSS(header)))
	nb.waitFor("rows sorted by n ascending", cellJS(i, `return [...out.querySelectorAll('.df-table tbody tr')].map((r) => r.children[1].textContent).join('') === 'abdc' &&
		out.querySelector('.df-table thead th:nth-child(3)').getAttribute('aria-sort') === 'ascending';`), 5*time.Second)
	nb.do("click the n header again", chromedp.Click(chromedp.CSS(header)))
	nb.waitFor("rows sorted by n descending", cellJS(i, `return [...out.querySelectorAll('.df-table tbody tr')].map((r) => r.children[1].textContent).join('') === 'dbac';`), 5*time.Second)
	nb.do("click the name header", chromedp.Click(chromedp.CSS(cellSel(i)+` .df-table thead th:nth-child(2) button`)))
	nb.waitFor("rows sorted by name", cellJS(i, `return [...out.querySelectorAll('.df-table tbody tr')].map((r) => r.children[1].textContent).join('') === 'abcd';`), 5*time.Second)
	// The HTML table is still there.
	nb.do("click HTML", chromedp.Click(chromedp.CSS(cellSel(i)+` .rich-tab[data-view="plain"]`)))
	nb.waitFor("the HTML frame", cellJS(i, `const f = out.querySelector('.rich-plain iframe.html-frame'); return f && f.getBoundingClientRect().width > 0 && out.querySelector('.df-view').hidden;`), 5*time.Second)
	if html := nb.srcdocContent(20 * time.Second); !strings.Contains(html, "<table") || !strings.Contains(html, ">100.0<") {
		t.Errorf("HTML view: %q", html)
	}
	nb.do("click Table", chromedp.Click(chromedp.CSS(cellSel(i)+` .rich-tab[data-view="rich"]`)))

	// A real matplotlib figure: the kernel describes it (richoutput.py), and
	// the page draws that description, its points under the pointer.
	i = nb.run(`import matplotlib.pyplot as plt; plt.plot([1, 2, 3], [1, 4, 9], label='real'); plt.title('from the kernel'); plt.show()`)
	nb.waitDone(i, "the kernel's own chart", `out.querySelector('.output-rich svg.chart-svg.chart-type-line circle.chart-point[data-tip="real: 2, 4"]')`, 60*time.Second)
	nb.hover("the kernel's point (2, 4)", fmt.Sprintf(`document.querySelector(%q)`, cellSel(i)+` circle.chart-point[data-tip="real: 2, 4"]`))
	nb.waitFor("the tooltip of the kernel's (2, 4)", cellJS(i, `return out.querySelector('.chart-tip').textContent === 'real: 2, 4' &&
		out.querySelector('.chart-title').textContent === 'from the kernel';`), 5*time.Second)

	// A real DataFrame: the kernel sends its data, the page a sortable table.
	i = nb.run(`import pandas as pd; pd.DataFrame({'city': ['Oslo', 'Lima', 'Pune'], 'pop': [0.7, 10.7, 3.1]})`)
	nb.waitDone(i, "the kernel's own table", `out.querySelector('.output-rich table.df-table tbody tr')`, 60*time.Second)
	nb.do("click the pop header", chromedp.Click(chromedp.CSS(cellSel(i)+` .df-table thead th:nth-child(3) button`)))
	nb.waitFor("the kernel's rows sorted by pop", cellJS(i, `return [...out.querySelectorAll('.df-table tbody tr')].map((r) => r.children[1].textContent).join(' ') === 'Oslo Pune Lima';`), 5*time.Second)

	done(func() {
		nb.hover("the point (2, 4) again", point)
		nb.waitFor("the tooltip for the screenshot", cellJS(0, `return !out.querySelector('.chart-tip').hidden;`), 5*time.Second)
	})
}

// termRows is a JavaScript expression giving the terminal's screen lines.
const termRows = `[...document.querySelectorAll('#terminal-screen .xterm-rows > div')].map((r) => r.textContent.replace(/\u00a0/g, ' ').trimEnd())`

func TestBrowserTerminal(t *testing.T) {
	nb, shot, done := richNotebook(t, "terminal")

	// A file the kernel writes is in the shell's working directory.
	i := nb.run(`open('from-kernel.txt', 'w').write('x')`)
	nb.waitDone(i, "the file written", `out.innerText.trim() === '1'`, 30*time.Second)

	nb.do("click Terminal", chromedp.Click(chromedp.CSS("#terminal-toggle")))
	nb.waitFor("the shell to run", `document.querySelector('#terminal-status').dataset.state === 'open'`, 30*time.Second)
	nb.waitFor("a prompt", termRows+`.some((r) => /[$#]$/.test(r))`, 30*time.Second)
	// A line goes in as typed text (an input event, which xterm.js sends
	// as it is), then the Enter key.
	typeLine := func(line string) {
		t.Helper()
		nb.do("type "+line, chromedp.Focus(chromedp.CSS("#terminal-screen .xterm-helper-textarea")),
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, input.InsertText, input.InsertTextParams{Text: line})
				return err
			}), pressEnter(false))
	}
	rowIs := func(what, want string) {
		t.Helper()
		nb.waitFor(what, fmt.Sprintf(`%s.some((r) => r.trim() === %q)`, termRows, want), 30*time.Second)
	}

	typeLine("ls")
	rowIs("ls to list the kernel's file", "from-kernel.txt")
	typeLine("python3 -c 'print(6*7)'")
	rowIs("python3 to print 42", "42")

	// The pane's size is the PTY's: make it taller, and stty sees the new rows.
	var rows int
	nb.eval(`document.querySelectorAll('#terminal-screen .xterm-rows > div').length`, &rows)
	nb.do("make the pane taller", chromedp.Evaluate[chromedp.Void](`document.querySelector('#terminal-screen').style.height = '600px'`))
	nb.waitFor("the terminal to grow", fmt.Sprintf(`document.querySelectorAll('#terminal-screen .xterm-rows > div').length > %d`, rows+5), 10*time.Second)
	nb.eval(`document.querySelectorAll('#terminal-screen .xterm-rows > div').length`, &rows)
	typeLine("echo size-$(stty size | tr ' ' x)")
	nb.waitFor("stty to report the pane's rows", fmt.Sprintf(`%s.some((r) => r.startsWith('size-%dx'))`, termRows, rows), 30*time.Second)

	// Ctrl-C interrupts a foreground command: the next line runs at once,
	// not after sleep's 100 s.
	typeLine("echo start-$((1+1)); sleep 100")
	rowIs("the sleep to start", "start-2")
	nb.do("Ctrl-C", chromedp.Focus(chromedp.CSS("#terminal-screen .xterm-helper-textarea")), pressLetter('c', ctrl))
	nb.waitFor("^C", termRows+`.some((r) => r.includes('^C'))`, 10*time.Second)
	typeLine("echo after-$((6*7))")
	rowIs("the shell to answer after Ctrl-C", "after-42")
	shot("terminal-shell.png")

	// exit ends the shell: the server's exit frame reaches the pane.
	typeLine("exit 3")
	nb.waitFor("the exit", `document.querySelector('#terminal-status').textContent === 'exited (3)'`, 30*time.Second)
	// A new shell on demand.
	nb.do("click New shell", chromedp.Click(chromedp.CSS("#terminal-restart")))
	nb.waitFor("the new shell to run", `document.querySelector('#terminal-status').dataset.state === 'open'`, 30*time.Second)
	typeLine("echo again-$((6*7))")
	rowIs("the new shell to answer", "again-42")
	done(nil)
}
