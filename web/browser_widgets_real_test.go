package web_test

// Browser test of Jupyter widgets end to end: the notebook in Debian's
// headless Chromium, the gateway's comm relay on /v1/sessions/{id}/ws and
// a real ipykernel with ipywidgets 8 (the local runtime), as a person uses
// them: a slider moved with the keyboard, an interact-ed plot, a button's
// callback, a tqdm.notebook bar while its cell runs, a reload.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// typeRun types text into the focused (next) cell, checks that the editor
// holds want (the editor indents the lines after a colon itself), and
// runs it with Shift+Enter; it returns the cell's index.
func (nb *notebook) typeRun(text, want string) int {
	nb.t.Helper()
	i := nb.next
	nb.typeInto(i, text, want)
	nb.do("Shift+Enter in cell "+fmt.Sprint(i), pressEnter(true))
	nb.waitFor(fmt.Sprintf("cell %d to run and advance", i),
		fmt.Sprintf(`document.querySelector(%q) !== null`, cellSel(i+1)), 10*time.Second)
	nb.next = i + 1
	return i
}

// rerun runs cell i again with its Run button.
func (nb *notebook) rerun(i int) {
	nb.t.Helper()
	nb.do(fmt.Sprintf("run cell %d again", i), chromedp.Click(chromedp.CSS(cellSel(i)+" .run-cell")))
}

// fullShot saves a screenshot of the whole notebook (the viewport made
// as tall as it).
func fullShot(nb *notebook, shot func(string), name string) {
	nb.t.Helper()
	var height int64
	nb.eval(`Math.ceil(document.querySelector('.layout').getBoundingClientRect().top + document.querySelector('#notebook').scrollHeight)`, &height)
	nb.do("resize for the screenshot", chromedp.EmulateViewport(1280, max(height, 1000)))
	shot(name)
}

func TestBrowserWidgetsReal(t *testing.T) {
	nb, shot, done, gw := richNotebookWrapped(t, "widgets-real", nil)
	const wait = 60 * time.Second

	// (a) A slider: the arrow key moves it, the kernel sees each value.
	// Two steps: ipywidgets sends the second only once the kernel's idle
	// for the first came back (its one-message-in-flight throttle).
	slider := nb.run("import ipywidgets as w; s = w.IntSlider(value=5, max=10, description='n'); s")
	nb.waitDone(slider, "the slider's view", `out.querySelector('.widget-slider .noUi-handle') && !out.querySelector('.widget-missing')`, wait)
	var readout string
	nb.eval(cellJS(slider, `return out.querySelector('.widget-readout').textContent;`), &readout)
	if readout != "5" {
		t.Errorf("slider readout %q, want 5", readout)
	}
	nb.do("focus the slider", chromedp.Focus(chromedp.CSS(cellSel(slider)+" .noUi-handle")))
	nb.do("ArrowRight on the slider", press("ArrowRight", "ArrowRight", 39, 0))
	nb.do("ArrowRight on the slider", press("ArrowRight", "ArrowRight", 39, 0))
	nb.waitFor("the readout to say 7", cellJS(slider, `return out.querySelector('.widget-readout').textContent === '7';`), 10*time.Second)
	nb.do("focus the next cell", chromedp.Click(chromedp.CSS(editorSel(nb.next))))
	value := nb.run("print('value', s.value)")
	// The page sends the second value after the first one's idle: ask
	// again until the kernel has it (it never does if the idle is lost).
	for deadline := time.Now().Add(30 * time.Second); ; {
		nb.waitDone(value, "print(s.value)", `out.innerText.includes('value ')`, wait)
		got := strings.TrimSpace(nb.outputText(value))
		if got == "value 7" {
			break
		}
		if got != "value 6" || time.Now().After(deadline) {
			t.Fatalf("the kernel sees %q, want value 7\n%s", got, nb.diagnose())
		}
		nb.rerun(value)
		nb.do("focus the next cell", chromedp.Click(chromedp.CSS(editorSel(nb.next))))
	}

	// (b) interact draws a matplotlib plot into its Output widget; moving
	// its slider draws it again.
	plot := nb.typeRun("import matplotlib.pyplot as plt; from ipywidgets import interact\n@interact(k=(1, 5))\ndef f(k=2):\nplt.plot([x ** k for x in range(10)]); plt.title(f'k = {k}'); plt.show()",
		"import matplotlib.pyplot as plt; from ipywidgets import interact\n@interact(k=(1, 5))\ndef f(k=2):\n    plt.plot([x ** k for x in range(10)]); plt.title(f'k = {k}'); plt.show()")
	pngInOutput := `const o = out.querySelector('.widget-output'); const img = o && o.querySelector('img[src^="data:image/png;base64,"]');`
	nb.waitDone(plot, "the plot in the Output widget", `(() => { `+pngInOutput+` return img && out.querySelector('.widget-readout').textContent === '2' &&
		!out.querySelector(':scope > .output:not(.output-widget) img'); })()`, wait)
	var first string
	nb.eval(cellJS(plot, pngInOutput+` return img.src;`), &first)
	nb.do("focus the plot's slider", chromedp.Focus(chromedp.CSS(cellSel(plot)+" .noUi-handle")))
	nb.do("ArrowRight on the plot's slider", press("ArrowRight", "ArrowRight", 39, 0))
	nb.waitFor("the plot drawn again for k = 3", cellJS(plot, pngInOutput+`
		return out.querySelector('.widget-readout').textContent === '3' && img && img.src !== `+jsString(first)+` &&
			o.querySelectorAll('img[src^="data:image/png;base64,"]').length === 1;`), 30*time.Second)

	// (c) A button whose callback counts the clicks and prints: the
	// print goes to the button's cell, the kernel has the count.
	nb.do("focus the next cell", chromedp.Click(chromedp.CSS(editorSel(nb.next))))
	button := nb.typeRun("b = w.Button(description='Count'); clicks = 0\ndef on_click(_):\nglobal clicks; clicks += 1; print('clicked', clicks)",
		"b = w.Button(description='Count'); clicks = 0\ndef on_click(_):\n    global clicks; clicks += 1; print('clicked', clicks)")
	nb.waitDone(button, "the definition", `true`, wait)
	nb.do("focus the next cell", chromedp.Click(chromedp.CSS(editorSel(nb.next))))
	button = nb.run("b.on_click(on_click); b")
	nb.waitDone(button, "the button's view", `out.querySelector('button.jupyter-button')`, wait)
	nb.do("click the button", chromedp.Click(chromedp.CSS(cellSel(button)+" button.jupyter-button")))
	nb.waitFor("the first click's output", cellJS(button, `return out.innerText.includes('clicked 1');`), 20*time.Second)
	nb.do("click the button again", chromedp.Click(chromedp.CSS(cellSel(button)+" button.jupyter-button")))
	nb.waitFor("the second click's output", cellJS(button, `return out.innerText.includes('clicked 2');`), 20*time.Second)
	nb.do("focus the next cell", chromedp.Click(chromedp.CSS(editorSel(nb.next))))
	count := nb.run("print('clicks', clicks)")
	nb.waitDone(count, "the kernel's count", `out.innerText.trim() === 'clicks 2'`, wait)

	// (d) A tqdm.notebook bar moves while its cell runs: each step waits
	// for an input() that the test answers once the page shows the bar
	// at that step, with the cell still running.
	nb.do("focus the next cell", chromedp.Click(chromedp.CSS(editorSel(nb.next))))
	bar := nb.run("from tqdm.notebook import tqdm; [input(f'step {i}') for i in tqdm(range(3), mininterval=0, miniters=1)]; print('finished')")
	seen := map[string]bool{}
	for step := 0; step < 3; step++ {
		field := cellSel(bar) + " .input-request:not(.answered) input"
		want := fmt.Sprintf("%d/3", step)
		nb.waitFor("the bar at "+want+" while the cell runs", cellJS(bar, fmt.Sprintf(`
			const p = out.querySelector('.widget-hprogress'), box = out.querySelector('.widget-hbox');
			return c.dataset.status !== 'idle' && !!p && box.innerText.includes(%q) &&
				!!out.querySelector('.input-request:not(.answered) input') &&
				out.querySelector('.input-request:not(.answered) .input-prompt').textContent === 'step %d';`, want, step)), wait)
		var text string
		nb.eval(cellJS(bar, `return out.querySelector('.widget-hbox').innerText.replace(/\s+/g, ' ');`), &text)
		seen[text] = true
		nb.do("answer step "+fmt.Sprint(step), chromedp.SendKeys(chromedp.CSS(field), "x"), pressEnter(false))
	}
	nb.waitDone(bar, "the bar at 100%", `out.innerText.includes('finished') && out.querySelector('.widget-hbox').innerText.includes('100%') &&
		out.querySelector('.widget-hbox').innerText.includes('3/3')`, wait)
	if len(seen) < 3 {
		t.Errorf("the bar showed %d distinct states while the cell ran (%v), want 3", len(seen), seen)
	}
	fullShot(nb, shot, "widgets-real-live.png")

	// (e) A reload: the notebook comes back from local storage, and the
	// page restores the widgets from the kernel with their values.
	nb.do("reload", chromedp.Navigate(gw.url+"/"))
	nb.waitFor("the app to start again", `window.glassroomReady === true`, 10*time.Second)
	// The page reopens the session by itself.
	nb.waitFor("the restored slider at 7", cellJS(slider, `const s = out.querySelector('.widget-slider');
		return !!s && s.querySelector('.widget-readout').textContent === '7' && !out.querySelector('.widget-missing');`), wait)
	nb.waitFor("the restored plot", cellJS(plot, `const o = out.querySelector('.widget-output');
		return !!o && !!o.querySelector('img[src^="data:image/png;base64,"]') && out.querySelector('.widget-readout').textContent === '3';`), wait)
	nb.waitFor("the restored button", cellJS(button, `return !!out.querySelector('button.jupyter-button') && out.innerText.includes('clicked 2');`), wait)
	// The restored slider still talks to the kernel.
	nb.do("focus the restored slider", chromedp.Focus(chromedp.CSS(cellSel(slider)+" .noUi-handle")))
	nb.do("ArrowLeft on the restored slider", press("ArrowLeft", "ArrowLeft", 37, 0))
	nb.waitFor("the readout to say 6", cellJS(slider, `return out.querySelector('.widget-readout').textContent === '6';`), 10*time.Second)
	nb.rerun(value)
	nb.waitDone(value, "the kernel to see 6", `out.innerText.trim() === 'value 6'`, wait)

	fullShot(nb, shot, "widgets-real-restored.png")

	// A restart takes the widgets along (the gateway says the kernel is
	// restarting): their outputs show the kernel's text for them again.
	nb.do("restart the kernel", chromedp.Click(chromedp.CSS("#restart-btn")))
	nb.waitFor("the slider's view to go", cellJS(slider, `return !out.querySelector('.widget-slider') &&
		out.querySelector('.widget-missing').textContent.startsWith('IntSlider(value=5');`), wait)
	nb.waitFor("an idle kernel after the restart", `document.querySelector('#kernel-status').dataset.state === 'idle'`, wait)

	// (f) No console error, no exception, no CSP violation (done checks).
	done(nil)
}

// TestBrowserWidgetFileUpload: a FileUpload widget, the user picks a
// 3 MiB file in Chromium's file chooser: the view sends the file's bytes
// in one comm frame (4 MiB in base64, above the WebSocket's code limit),
// and the kernel's widget holds them byte for byte. A 9 MiB file, above
// what a comm message may carry, is refused by the page with a message.
func TestBrowserWidgetFileUpload(t *testing.T) {
	nb, _, done, _ := richNotebookWrapped(t, "widgets-upload", nil)
	const wait = 60 * time.Second
	file := make([]byte, 3<<20)
	for i := range file {
		file[i] = byte(i*7 + i>>11)
	}
	path := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	upload := nb.run("import ipywidgets as w; u = w.FileUpload(); u")
	nb.waitDone(upload, "the upload's view", `out.querySelector('button.widget-upload') && !out.querySelector('.widget-missing')`, wait)
	// As a person does: a click on Upload opens the file chooser (here
	// intercepted), where the file is picked.
	nb.do("intercept the file chooser", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: true})
		return err
	}))
	pick := func(path string) {
		t.Helper()
		opened, err := chromedp.Run(nb.ctx, chromedp.WaitEvent(page.FileChooserOpened, nil, chromedp.Click(chromedp.CSS(cellSel(upload)+" button.widget-upload"))))
		if err != nil || opened.BackendNodeID == 0 {
			t.Fatalf("the file chooser: %+v %v\n%s", opened, err, nb.diagnose())
		}
		nb.do("pick "+path, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: []string{path}, BackendNodeID: opened.BackendNodeID})
			return err
		}))
	}
	pick(path)
	nb.waitFor("the button to count the file", cellJS(upload, `return out.querySelector('.widget-upload').textContent.includes('(1)');`), wait)
	nb.do("focus the next cell", chromedp.Click(chromedp.CSS(editorSel(nb.next))))
	sum := sha256.Sum256(file)
	want := fmt.Sprintf("big.bin %d %s", len(file), hex.EncodeToString(sum[:]))
	check := nb.run("import hashlib; f = u.value[0] if u.value else None; print(f.name, len(f.content), hashlib.sha256(f.content).hexdigest()) if f else print('no file')")
	// The update may still be on its way: ask again until the kernel has it.
	for deadline := time.Now().Add(30 * time.Second); ; {
		nb.waitDone(check, "the kernel's file", `out.innerText.trim() !== ''`, wait)
		got := strings.TrimSpace(nb.outputText(check))
		if got == want {
			break
		}
		if got != "no file" || time.Now().After(deadline) {
			t.Fatalf("the kernel's file: %q, want %q\n%s", got, want, nb.diagnose())
		}
		nb.rerun(check)
	}

	// A file above what a comm message may carry (8 MiB) is not sent: the
	// page says so, the connection stays, the kernel keeps the first file.
	huge := filepath.Join(t.TempDir(), "huge.bin")
	if err := os.WriteFile(huge, make([]byte, 9<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	pick(huge)
	nb.waitFor("the page to say the file was not sent", `document.querySelector('#message').textContent.includes('more than the 8 MiB a comm message may carry')`, wait)
	nb.rerun(check)
	nb.waitDone(check, "the kernel's file after the refused one", `out.innerText.trim() === `+jsString(want), wait)
	done(nil)
}
