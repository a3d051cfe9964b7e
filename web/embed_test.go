package web

import (
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func readAsset(t *testing.T, fsys fs.FS, name string) string {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	if len(b) == 0 {
		t.Fatalf("%s is empty", name)
	}
	return string(b)
}

func TestAssetsHasFiles(t *testing.T) {
	fsys, err := Assets()
	if err != nil {
		t.Fatalf("Assets: %v", err)
	}
	for _, name := range []string{"index.html", "js/main.js", "style.css", "favicon.svg"} {
		readAsset(t, fsys, name)
	}
	if _, err := fs.Stat(fsys, "static"); err == nil {
		t.Errorf("Assets should be rooted inside static/, but static/ is still visible")
	}
}

var (
	scriptTag = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script\s*>`)
	srcAttr   = regexp.MustCompile(`(?i)\bsrc\s*=`)
	handler   = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	styleAttr = regexp.MustCompile(`(?i)<[^>]*\sstyle\s*=`)
	styleTag  = regexp.MustCompile(`(?i)<style\b`)
	remoteURL = regexp.MustCompile(`(?i)https?://[a-z0-9\[]`) // a URL with a host
	// XML namespace names look like URLs but are never fetched.
	xmlNamespace = regexp.MustCompile(`http://www\.w3\.org/(2000/svg|1999/xhtml|1999/xlink|1998/Math/MathML|XML/1998/namespace|2000/xmlns/)`)
	jsURL        = regexp.MustCompile(`(?i)javascript:`)
	unsafeSink   = regexp.MustCompile(`\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\s*\(|new Function\b|createContextualFragment)`)
)

// The page runs under script-src 'self'; style-src 'self', so none of these
// may appear in the markup.
func TestIndexHTMLIsCSPClean(t *testing.T) {
	fsys, err := Assets()
	if err != nil {
		t.Fatalf("Assets: %v", err)
	}
	html := readAsset(t, fsys, "index.html")

	scripts := scriptTag.FindAllStringSubmatch(html, -1)
	if len(scripts) == 0 {
		t.Fatalf("index.html loads no script")
	}
	for _, m := range scripts {
		if strings.TrimSpace(m[2]) != "" {
			t.Errorf("inline script body in index.html: %q", m[0])
		}
		if !srcAttr.MatchString(m[1]) {
			t.Errorf("script tag without src: %q", m[0])
		}
	}
	if len(scripts) != 1 || !strings.Contains(scripts[0][1], `type="module"`) || !strings.Contains(scripts[0][1], `src="js/main.js"`) {
		t.Errorf("index.html must load exactly one script, the module js/main.js: %q", scripts)
	}
	if !strings.Contains(html, `href="style.css"`) {
		t.Errorf("index.html must load style.css")
	}
	for name, re := range map[string]*regexp.Regexp{
		"inline event handler": handler,
		"style attribute":      styleAttr,
		"<style> element":      styleTag,
		"javascript: URL":      jsURL,
	} {
		if loc := re.FindStringIndex(html); loc != nil {
			t.Errorf("index.html has a %s: %q", name, html[loc[0]:min(loc[1]+40, len(html))])
		}
	}
}

// Everything must work offline: no CDN, no external fonts.
func TestNoRemoteResources(t *testing.T) {
	fsys, err := Assets()
	if err != nil {
		t.Fatalf("Assets: %v", err)
	}
	for _, name := range assetNames(t, fsys, "") {
		if strings.HasSuffix(name, ".txt") {
			continue // licences: text, never loaded by the page
		}
		body := xmlNamespace.ReplaceAllString(readAsset(t, fsys, name), "xmlns")
		if loc := remoteURL.FindStringIndex(body); loc != nil {
			t.Errorf("%s references a remote URL: %q", name, body[loc[0]:min(loc[1]+40, len(body))])
		}
	}
}

// assetNames lists the embedded files whose names end in ext ("" for all).
func assetNames(t *testing.T, fsys fs.FS, ext string) []string {
	t.Helper()
	var names []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ext) {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// modules returns the app's own ES modules (js/*.js) and their text.
func modules(t *testing.T) map[string]string {
	t.Helper()
	fsys, err := Assets()
	if err != nil {
		t.Fatalf("Assets: %v", err)
	}
	mods := map[string]string{}
	for _, name := range assetNames(t, fsys, ".js") {
		if strings.HasPrefix(name, "js/") {
			mods[name] = readAsset(t, fsys, name)
		}
	}
	if len(mods) < 5 {
		t.Fatalf("only %d modules under js/: %v", len(mods), mods)
	}
	return mods
}

// vendorBundle is the third-party file the modules import; widgetsBundle
// is the one they may import at run time (import() of js/widgets.js, when
// a session has widgets).
const (
	vendorBundle  = "vendor/vendor.js"
	widgetsBundle = "vendor/widgets.js"
)

var (
	importFrom    = regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(`)
	dynamicImport = regexp.MustCompile(`\bimport\s*\(\s*'([^']+)'\s*\)`)
)

// Every module is reached from js/main.js through relative static imports
// of files that exist (or of the vendor bundle); nothing is imported from
// elsewhere, nor at run time but the widgets bundle by js/widgets.js.
func TestModuleGraph(t *testing.T) {
	mods := modules(t)
	seen := map[string]bool{}
	queue := []string{"js/main.js"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		src, ok := mods[name]
		if !ok {
			t.Errorf("module %s is imported but not embedded", name)
			continue
		}
		dynamic := dynamicImport.FindAllStringSubmatch(src, -1)
		for _, m := range dynamic {
			if name != "js/widgets.js" || path.Join(path.Dir(name), m[1]) != widgetsBundle {
				t.Errorf("%s imports %q at run time: only js/widgets.js may, and only %s", name, m[1], widgetsBundle)
			}
		}
		for _, m := range importFrom.FindAllStringSubmatch(src, -1) {
			spec := m[1]
			if spec == "" {
				if len(dynamic) == 0 {
					t.Errorf("%s uses a dynamic import() of something other than a string", name)
				}
				continue
			}
			if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
				t.Errorf("%s imports %q: only relative imports of the app's own files", name, spec)
				continue
			}
			if target := path.Join(path.Dir(name), spec); target != vendorBundle {
				queue = append(queue, target)
			}
		}
	}
	for name := range mods {
		if !seen[name] {
			t.Errorf("module %s is not reached from js/main.js", name)
		}
	}
}

// Kernel output must only reach the DOM through textContent and friends, in
// every module of the app.
func TestModulesAvoidHTMLSinks(t *testing.T) {
	mods := modules(t)
	names := make([]string, 0, len(mods))
	for name := range mods {
		names = append(names, name)
	}
	slices.Sort(names)
	var all strings.Builder
	for _, name := range names {
		js := mods[name]
		all.WriteString(js)
		for n, line := range strings.Split(js, "\n") {
			code := line
			if i := strings.Index(code, "//"); i >= 0 && !strings.Contains(code[:i], "'") {
				code = code[:i]
			}
			if m := unsafeSink.FindString(code); m != "" {
				t.Errorf("%s:%d uses %s: %q", name, n+1, m, strings.TrimSpace(line))
			}
		}
	}
	js := all.String()
	if !strings.Contains(js, `setAttribute('sandbox', '')`) {
		t.Errorf("the modules must put HTML output in <iframe sandbox=\"\">")
	}
	if strings.Contains(js, "allow-scripts") || strings.Contains(js, "allow-same-origin") {
		t.Errorf("the modules must not relax the iframe sandbox")
	}
}

// The vendor bundles are the committed output of `make web-vendor`: built
// from the versions web/vendor/package.json pins, each one self-contained
// ES module that needs no eval (the CSP forbids it) and loads nothing; the
// widgets bundle's stylesheet loads nothing but its fonts, beside it.
func TestVendorBundle(t *testing.T) {
	fsys, err := Assets()
	if err != nil {
		t.Fatalf("Assets: %v", err)
	}
	readAsset(t, fsys, "vendor/LICENSES.txt")
	raw, err := os.ReadFile("vendor/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatalf("vendor/package.json: %v", err)
	}
	var built []string
	for _, bundle := range []string{vendorBundle, widgetsBundle} {
		js := readAsset(t, fsys, bundle)
		lines := strings.SplitN(js, "\n", 3)
		if len(lines) < 3 || !strings.Contains(lines[0], "make web-vendor") {
			t.Fatalf("%s has no build banner: %q", bundle, lines[0])
		}
		built = append(built, strings.Fields(strings.TrimPrefix(lines[1], "//"))...)
		// importScripts only as a call: xterm.js tests typeof importScripts
		// to tell whether it runs in a worker.
		for _, bad := range []string{"eval(", "new Function", "import(", "importScripts(", "document.write"} {
			if strings.Contains(js, bad) {
				t.Errorf("%s contains %q", bundle, bad)
			}
		}
		if regexp.MustCompile(`(?m)^\s*import\b`).MatchString(js) {
			t.Errorf("%s imports other files: it must be self-contained", bundle)
		}
	}
	for name, version := range pkg.Dependencies {
		if !slices.Contains(built, name+"@"+version) {
			t.Errorf("package.json pins %s@%s, the bundles have %v: run `make web-vendor`", name, version, built)
		}
	}
	css := readAsset(t, fsys, "vendor/widgets.css")
	urls := regexp.MustCompile(`url\(\s*"?([^")]+)"?\s*\)`).FindAllStringSubmatch(css, -1)
	fonts := 0
	for _, u := range urls {
		switch {
		case strings.HasPrefix(u[1], "data:"):
		case strings.HasPrefix(u[1], "./fonts/") && strings.HasSuffix(u[1], ".woff2"):
			readAsset(t, fsys, path.Join("vendor", u[1]))
			fonts++
		default:
			t.Errorf("widgets.css loads %q: only its fonts beside it, or data: URLs", u[1])
		}
	}
	if fonts != 3 || strings.Contains(css, "@import") {
		t.Errorf("widgets.css: %d fonts (want Font Awesome's 3), @import: %v", fonts, strings.Contains(css, "@import"))
	}
}
