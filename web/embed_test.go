package web

import (
	"io/fs"
	"regexp"
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
	for _, name := range []string{"index.html", "app.js", "style.css", "favicon.svg"} {
		readAsset(t, fsys, name)
	}
	if _, err := fs.Stat(fsys, "static"); err == nil {
		t.Errorf("Assets should be rooted inside static/, but static/ is still visible")
	}
}

var (
	scriptTag  = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script\s*>`)
	srcAttr    = regexp.MustCompile(`(?i)\bsrc\s*=`)
	handler    = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	styleAttr  = regexp.MustCompile(`(?i)<[^>]*\sstyle\s*=`)
	styleTag   = regexp.MustCompile(`(?i)<style\b`)
	remoteURL  = regexp.MustCompile(`(?i)https?://`)
	jsURL      = regexp.MustCompile(`(?i)javascript:`)
	unsafeSink = regexp.MustCompile(`\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\s*\(|new Function\b|createContextualFragment)`)
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
	if !strings.Contains(html, `src="app.js"`) || !strings.Contains(html, `href="style.css"`) {
		t.Errorf("index.html must load app.js and style.css")
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
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		body := readAsset(t, fsys, name)
		if loc := remoteURL.FindStringIndex(body); loc != nil {
			t.Errorf("%s references a remote URL: %q", name, body[loc[0]:min(loc[1]+40, len(body))])
		}
	}
}

// Kernel output must only reach the DOM through textContent and friends.
func TestAppJSAvoidsHTMLSinks(t *testing.T) {
	fsys, err := Assets()
	if err != nil {
		t.Fatalf("Assets: %v", err)
	}
	js := readAsset(t, fsys, "app.js")
	for _, line := range strings.Split(js, "\n") {
		code := line
		if i := strings.Index(code, "//"); i >= 0 && !strings.Contains(code[:i], "'") {
			code = code[:i]
		}
		if m := unsafeSink.FindString(code); m != "" {
			t.Errorf("app.js uses %s: %q", m, strings.TrimSpace(line))
		}
	}
	if !strings.Contains(js, `setAttribute('sandbox', '')`) {
		t.Errorf("app.js must put HTML output in <iframe sandbox=\"\">")
	}
	if strings.Contains(js, "allow-scripts") || strings.Contains(js, "allow-same-origin") {
		t.Errorf("app.js must not relax the iframe sandbox")
	}
}
