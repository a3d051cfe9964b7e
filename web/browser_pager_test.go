package web_test

// Browser test of what an execute reply's payload does in the notebook, in
// Debian's headless Chromium against a real gateway over real (bubblewrap)
// kernels: obj? and obj?? open the help pane (the gateway's page events),
// %load and set_next_input fill a cell (set_next_input events), and exit()
// leaves a notice without ending the session (ask_exit).

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// helpText is the help pane's text, or "" while it is hidden.
const helpText = `(() => { const p = document.querySelector('#help-panel'); return p.hidden ? '' : p.innerText; })()`

func TestBrowserHelpAndLoad(t *testing.T) {
	nb, shot, done := richNotebook(t, "help")

	// len? pages the docstring: the help pane shows it, the cell shows nothing.
	i := nb.run(`len?`)
	nb.waitDone(i, "len? to finish", `true`, 60*time.Second)
	nb.waitFor("the help pane with len's docstring", helpText+`.includes('Return the number of items')`, 10*time.Second)
	var pane struct {
		Title   string
		Outputs string
		Colours int
		Visible bool
	}
	nb.eval(`(() => {
		const p = document.querySelector('#help-panel');
		return {title: document.querySelector('#help-title').textContent,
			outputs: document.querySelector('`+cellSel(i)+` .outputs').innerText,
			colours: p.querySelectorAll('#help-body pre span[class*="ansi-"]').length,
			visible: p.getBoundingClientRect().height > 50};
	})()`, &pane)
	if pane.Title != "Help: len" || pane.Outputs != "" || pane.Colours == 0 || !pane.Visible {
		t.Errorf("after len?: %+v, want the title \"Help: len\", no output in the cell, ANSI colours as spans, a visible pane", pane)
	}

	shot("help-pane.png")

	// Escape in the editor means command mode; Escape again closes the pane.
	nb.do("Escape in the editor", pressEscape())
	nb.waitFor("command mode", `document.activeElement && document.activeElement.classList.contains('cell')`, 5*time.Second)
	var still string
	nb.eval(helpText, &still)
	if !strings.Contains(still, "Return the number of items") {
		t.Errorf("the first Escape (to command mode) closed the help pane")
	}
	nb.do("Escape in command mode", pressEscape())
	nb.waitFor("the help pane to close", helpText+` === ''`, 5*time.Second)

	// obj?? shows the source; the pane's button closes it.
	nb.do("edit the next cell", pressEnter(false))
	i = nb.run(`def twice(x): return 2 * x  # src-marker`)
	nb.waitDone(i, "the def", `true`, 30*time.Second)
	i = nb.run(`twice??`)
	nb.waitDone(i, "twice?? to finish", `true`, 30*time.Second)
	nb.waitFor("the help pane with twice's source", helpText+`.includes('# src-marker')`, 10*time.Second)
	nb.do("click the close button", chromedp.Click(chromedp.CSS("#help-close")))
	nb.waitFor("the help pane to close", helpText+` === ''`, 5*time.Second)

	// %load of a file in the workspace puts it into the cell (IPython asks
	// to replace the cell's text); the loaded code then runs.
	nb.do("focus the next cell", chromedp.Click(chromedp.CSS(editorSel(nb.next))))
	i = nb.run(`open('snippet.py', 'w').write('base = 40\nprint("loaded", base + 2)\n')`)
	nb.waitDone(i, "the file to be written", `true`, 30*time.Second)
	i = nb.run(`%load snippet.py`)
	want := "# %load snippet.py\nbase = 40\nprint(\"loaded\", base + 2)\n"
	nb.waitFor("%load to fill the cell", cellJS(i, `return [...c.querySelectorAll('.cm-line')].map((l) => l.textContent).join('\n') === `+jsString(want)+`;`), 30*time.Second)
	nb.waitDone(i, "%load to finish", `true`, 30*time.Second)
	nb.do("run the loaded cell", chromedp.Click(chromedp.CSS(cellSel(i)+" .run-cell")))
	nb.waitDone(i, "the loaded code's output", `out.innerText.includes('loaded 42')`, 30*time.Second)

	// set_next_input without replace fills the next cell: the empty one
	// Shift+Enter made.
	nb.do("focus the next cell", chromedp.Click(chromedp.CSS(editorSel(nb.next))))
	i = nb.run(`get_ipython().set_next_input('after = "next"')`)
	nb.waitDone(i, "set_next_input to finish", `true`, 30*time.Second)
	nb.waitText(i+1, `after = "next"`, "set_next_input")
	if got := nb.cellText(i); got != `get_ipython().set_next_input('after = "next"')` {
		t.Errorf("set_next_input without replace changed its own cell to %q", got)
	}

	// exit() asks to exit: a notice, and the session stays. With
	// keep_kernel the kernel goes on with its variables.
	var session string
	nb.eval(`document.querySelector('#session-id').textContent`, &session)
	nb.do("focus a new cell", chromedp.Click(chromedp.CSS("#add-cell-bottom")))
	var last int
	nb.eval(`document.querySelectorAll('#cells > .cell').length - 1`, &last)
	nb.next = last
	i = nb.run(`exit(keep_kernel=True)`)
	nb.waitDone(i, "the exit notice that keeps the kernel", `out.querySelector('.output-notice.ask-exit') && out.innerText.includes('keeping the kernel')`, 30*time.Second)
	i = nb.run(`print('still', twice(21))`)
	nb.waitDone(i, "the kernel to go on after exit()", `out.innerText.includes('still 42')`, 30*time.Second)
	// A plain quit() stops the kernel (the gateway starts another); the
	// page says so and keeps the session.
	i = nb.run(`quit()`)
	nb.waitDone(i, "the quit notice", `out.querySelector('.output-notice.ask-exit') && out.innerText.includes('starts again')`, 30*time.Second)
	var after string
	nb.eval(`document.querySelector('#session-id').textContent`, &after)
	if after != session {
		t.Errorf("session %q after exit() and quit(), was %q", after, session)
	}

	done(nil)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
