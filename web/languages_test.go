package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// requireKernels returns the kernels the gateway runs (GET /v1/kernels),
// and skips the test (fails it in CI) when one of want is not among them.
func requireKernels(t *testing.T, gw *server, want ...string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, gw.url+"/v1/kernels", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+browserKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Kernels []struct{ Name string } `json:"kernels"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/kernels: status %d, %v", resp.StatusCode, err)
	}
	var have []string
	for _, k := range body.Kernels {
		have = append(have, k.Name)
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the %s kernel is required in CI; the local runtime runs %v (run `make test-deps`)", w, have)
			}
			t.Skipf("\n\n*** SKIPPING: the local runtime has no %s kernel (it runs %v) ***\n\n", w, have)
		}
	}
	return have
}

// savedNotebook is what the tests read of a saved .ipynb.
type savedNotebook struct {
	NBFormat int `json:"nbformat"`
	Metadata struct {
		Kernelspec   map[string]any `json:"kernelspec"`
		LanguageInfo map[string]any `json:"language_info"`
	} `json:"metadata"`
	Cells []struct {
		CellType string   `json:"cell_type"`
		Source   []string `json:"source"`
	} `json:"cells"`
}

// saveIpynb clicks Save .ipynb and returns the path of the downloaded
// file (a new one in its own directory) and what it holds.
func (nb *notebook) saveIpynb() (string, savedNotebook) {
	nb.t.Helper()
	dir := nb.t.TempDir()
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
		if m, _ := filepath.Glob(filepath.Join(dir, "*.ipynb")); len(m) > 0 {
			file = m[0]
		} else {
			time.Sleep(100 * time.Millisecond) // polling the download directory
		}
	}
	if file == "" {
		nb.t.Fatalf("no .ipynb downloaded\n%s", nb.diagnose())
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		nb.t.Fatal(err)
	}
	var saved savedNotebook
	if err := json.Unmarshal(raw, &saved); err != nil {
		nb.t.Fatalf("the saved notebook is not JSON: %v", err)
	}
	return file, saved
}

// chooseLanguage picks kernel name in the notebook's language chooser, as
// a person does: the select's value changes and it fires "change".
func (nb *notebook) chooseLanguage(name string) {
	nb.t.Helper()
	var ok bool
	nb.eval(fmt.Sprintf(`(() => {
		const s = document.querySelector('#language-select');
		if (![...s.options].some((o) => o.value === %[1]q && !o.disabled)) return false;
		s.focus();
		s.value = %[1]q;
		s.dispatchEvent(new Event('input', {bubbles: true}));
		s.dispatchEvent(new Event('change', {bubbles: true}));
		return true;
	})()`, name), &ok)
	if !ok {
		nb.t.Fatalf("the language chooser has no %s\n%s", name, nb.diagnose())
	}
	// Back to the cell that was to be typed into.
	nb.do("focus the next cell", chromedp.Click(chromedp.CSS(editorSel(nb.next))))
}

// kernelVersion waits until the language chooser shows the version of the
// notebook's kernel (which the kernel told: kernel_info) and returns it.
func (nb *notebook) kernelVersion(display string) string {
	nb.t.Helper()
	re := fmt.Sprintf(`new RegExp(': ' + %q.replace(/[()]/g, '\\$&') + ' \\(([^)]+)\\)$')`, display)
	nb.waitFor(display+"'s version in the chooser", re+`.test(document.querySelector('#language-select').title)`, 30*time.Second)
	var v string
	nb.eval(re+`.exec(document.querySelector('#language-select').title)[1]`, &v)
	return v
}

// prompt returns cell i's prompt: its language and its count ("R [1]").
func (nb *notebook) prompt(i int) string {
	nb.t.Helper()
	var s string
	nb.eval(cellJS(i, `return c.querySelector('.exec-lang').textContent + ' ' + c.querySelector('.exec-count').textContent;`), &s)
	return s
}

// TestBrowserLanguages: a notebook switched to R runs R (a plot shows as a
// PNG), switched to TypeScript runs TypeScript, and back in Python still
// has its variables: each language runs in its own kernel (context) of the
// one session. Prompts name the language, completion asks the language's
// kernel, Restart restarts that kernel only, and Save .ipynb writes the
// language's kernelspec and language_info, which opening the file reads
// back. Real Chromium, real
// gateway, real R (IRkernel) and Deno kernels.
func TestBrowserLanguages(t *testing.T) {
	bin := chromium(t)
	gw := startGateway(t)
	requireKernels(t, gw, "python3", "r", "typescript")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	tabCtx, perr := openTab(t, ctx, bin)
	nb := &notebook{t: t, ctx: tabCtx}

	nb.do("open the page", chromedp.Navigate(gw.url+"/?token="+browserKey))
	nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
	nb.waitFor("the installed languages in the chooser", `(() => {
		const v = [...document.querySelectorAll('#language-select option')].map((o) => o.value);
		return ['python3', 'r', 'typescript'].every((k) => v.includes(k));
	})()`, 10*time.Second)
	var chosen string
	nb.eval(`document.querySelector('#language-select').value`, &chosen)
	if chosen != "python3" {
		t.Errorf("a new notebook's language is %q, want python3", chosen)
	}
	nb.do("click New session", chromedp.Click(chromedp.CSS("#new-session")))
	nb.waitFor("an idle kernel", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 60*time.Second)

	py := nb.run("x = 41")
	nb.waitDone(py, "x = 41", `out.innerText.trim() === ''`, 30*time.Second)
	if got := nb.prompt(py); got != "Python [1]" {
		t.Errorf("the Python cell's prompt: %q, want \"Python [1]\"", got)
	}

	// R: a plot is a PNG.
	nb.chooseLanguage("r")
	nb.waitFor("the next cell's prompt to say R", cellJS(nb.next, `return c.querySelector('.exec-lang').textContent === 'R';`), 5*time.Second)
	if got := nb.prompt(py); got != "Python [1]" {
		t.Errorf("after switching to R, the Python cell's prompt is %q: it ran in Python", got)
	}
	nb.waitFor("the badge to say the R kernel has not started", `document.querySelector('#kernel-status').dataset.state === 'not started'`, 5*time.Second)
	r := nb.run("plot(1:10)")
	nb.waitDone(r, "a decoded PNG plot",
		`[...out.querySelectorAll('.output-display img')].some((img) => img.complete && img.naturalWidth > 0 && img.src.startsWith('data:image/png;base64,'))`,
		120*time.Second)
	if got := nb.prompt(r); got != "R [1]" {
		t.Errorf("the R cell's prompt: %q, want \"R [1]\"", got)
	}
	nb.waitFor("R highlighting", cellJS(r, `return [...c.querySelectorAll('.cm-content .tok-number')].some((e) => e.textContent === '10');`), 5*time.Second)
	nb.waitFor("the R kernel idle", `document.querySelector('#kernel-status').dataset.state === 'idle'`, 30*time.Second)
	// Completion asks R's kernel: Python knows no "plo".
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

	rVersion := nb.kernelVersion("R")
	_, savedR := nb.saveIpynb()
	wantMeta := func(what string, got savedNotebook, spec, info map[string]any) {
		t.Helper()
		for k, v := range spec {
			if got.Metadata.Kernelspec[k] != v {
				t.Errorf("%s: kernelspec %v, want %s = %v", what, got.Metadata.Kernelspec, k, v)
			}
		}
		for k, v := range info {
			if got.Metadata.LanguageInfo[k] != v {
				t.Errorf("%s: language_info %v, want %s = %v", what, got.Metadata.LanguageInfo, k, v)
			}
		}
	}
	wantMeta("saved in R", savedR, map[string]any{"name": "r", "display_name": "R", "language": "R"},
		map[string]any{"name": "R", "file_extension": ".r", "mimetype": "text/x-r-source", "version": rVersion})
	if !regexp.MustCompile(`^\d+\.\d+`).MatchString(rVersion) {
		t.Errorf("R's version: %q", rVersion)
	}

	// TypeScript: types are checked and stripped.
	nb.chooseLanguage("typescript")
	ts := nb.run("function add(a: number, b: number): number { return a + b }; add(40, 2)")
	nb.waitDone(ts, "42 as the result", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '42')`, 120*time.Second)
	if got := nb.prompt(ts); got != "TS [1]" {
		t.Errorf("the TypeScript cell's prompt: %q, want \"TS [1]\"", got)
	}
	nb.waitFor("TypeScript highlighting", cellJS(ts, `const k = [...c.querySelectorAll('.cm-content .tok-keyword')].map((e) => e.textContent);
		const t = [...c.querySelectorAll('.cm-content .tok-typeName')].map((e) => e.textContent);
		return k.includes('function') && t.includes('number');`), 5*time.Second)
	tsVersion := nb.kernelVersion("TypeScript (Deno)")
	file, savedTS := nb.saveIpynb()
	wantMeta("saved in TypeScript", savedTS, map[string]any{"name": "typescript", "language": "typescript"},
		map[string]any{"name": "typescript", "file_extension": ".ts", "mimetype": "text/x.typescript", "version": tsVersion})
	if ds, _ := savedTS.Metadata.Kernelspec["display_name"].(string); !strings.Contains(ds, "TypeScript") {
		t.Errorf("saved in TypeScript: kernelspec display_name %q", ds)
	}

	// Python again: its kernel kept x while R and TypeScript ran.
	nb.chooseLanguage("python3")
	back := nb.run("x + 1")
	nb.waitDone(back, "42 from Python's x", `[...out.querySelectorAll('.output-result')].some((r) => r.innerText.trim() === '42')`, 30*time.Second)
	if got := nb.prompt(back); got != "Python [2]" {
		t.Errorf("the second Python cell's prompt: %q, want \"Python [2]\"", got)
	}
	if got := nb.prompt(ts); got != "TS [1]" {
		t.Errorf("back in Python, the TypeScript cell's prompt is %q", got)
	}

	// Restart restarts the notebook language's kernel, not the others.
	nb.chooseLanguage("r")
	y := nb.run("y <- 5")
	nb.waitDone(y, "y <- 5", `true`, 30*time.Second)
	nb.do("click Restart", chromedp.Click(chromedp.CSS("#restart-btn")))
	nb.waitFor("the R kernel restarted", `document.querySelector('#message').textContent === 'R kernel restarted'`, 60*time.Second)
	gone := nb.run("cat(exists('y'))")
	nb.waitDone(gone, "R without y", `out.innerText.trim() === 'FALSE'`, 60*time.Second)
	if got := nb.prompt(gone); got != "R [1]" {
		t.Errorf("after R's restart the prompt is %q, want \"R [1]\"", got)
	}
	nb.chooseLanguage("python3")
	kept := nb.run("print(x)")
	nb.waitDone(kept, "Python's x after R's restart", `out.innerText.trim() === '41'`, 30*time.Second)

	// Opening the TypeScript notebook makes the notebook TypeScript.
	nb.do("open the saved notebook", chromedp.SetUploadFiles(chromedp.CSS("#open-ipynb"), []string{file}))
	nb.waitFor("the opened notebook", `(() => { const m = document.querySelector('#message'); return !m.hidden && m.textContent.startsWith('Opened '); })()`, 10*time.Second)
	nb.eval(`document.querySelector('#language-select').value`, &chosen)
	if chosen != "typescript" {
		t.Errorf("after opening a TypeScript notebook the language is %q", chosen)
	}
	// Each cell's prompt names the language its outputs came from (saved
	// in the cell's metadata when it is not the notebook's), after opening
	// the file and after a reload.
	prompts := func() string {
		var got []string
		nb.eval(`[...document.querySelectorAll('#cells > .cell')].map((c) => c.querySelector('.exec-lang').textContent + ' ' + c.querySelector('.exec-count').textContent)`, &got)
		return strings.Join(got, ", ")
	}
	const wantPrompts = "Python [1], R [1], TS [1], TS [ ]"
	if got := prompts(); got != wantPrompts {
		t.Errorf("the opened notebook's prompts: %s, want %s", got, wantPrompts)
	}
	nb.do("reload", chromedp.Reload())
	nb.waitFor("the app to start", `window.glassroomReady === true`, 10*time.Second)
	if got := prompts(); got != wantPrompts {
		t.Errorf("after a reload the prompts are: %s, want %s", got, wantPrompts)
	}

	exceptions, errs := perr.snapshot()
	for _, e := range exceptions {
		t.Errorf("JavaScript exception: %s", e)
	}
	for _, e := range errs {
		t.Errorf("console: %s", e)
	}
}
