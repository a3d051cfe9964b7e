package web

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docModules returns the module names of the list in doc.go's "The
// modules" paragraph: each item is "  - name: …" or "  - a, b: …".
func docModules(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	start := strings.Index(text, "// The modules, one concern each")
	if start < 0 {
		t.Fatal(`doc.go has no "The modules, one concern each" paragraph`)
	}
	end := strings.Index(text[start:], "\n//\n// The pure ones")
	if end < 0 {
		t.Fatal(`doc.go's module list does not end before "The pure ones"`)
	}
	item := regexp.MustCompile(`(?m)^//   - ([a-z]+(?:, [a-z]+)*):`)
	var names []string
	for _, m := range item.FindAllStringSubmatch(text[start:start+end], -1) {
		names = append(names, strings.Split(m[1], ", ")...)
	}
	if len(names) == 0 {
		t.Fatal("doc.go's module list has no items")
	}
	return names
}

// TestDocListsEveryModule: the package comment's list of the UI's modules
// names each file of static/js once, and nothing else, so the map of the
// code a newcomer reads there stays true when a module is added, renamed
// or removed.
func TestDocListsEveryModule(t *testing.T) {
	listed := docModules(t)
	files, err := filepath.Glob(filepath.Join("static", "js", "*.js"))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, f := range files {
		onDisk = append(onDisk, strings.TrimSuffix(filepath.Base(f), ".js"))
	}
	if len(onDisk) == 0 {
		t.Fatal("no modules under static/js")
	}
	seen := map[string]bool{}
	for _, n := range listed {
		if seen[n] {
			t.Errorf("doc.go lists module %q twice", n)
		}
		seen[n] = true
		if !slices.Contains(onDisk, n) {
			t.Errorf("doc.go lists module %q, but static/js/%s.js does not exist", n, n)
		}
	}
	for _, n := range onDisk {
		if !seen[n] {
			t.Errorf("static/js/%s.js is not in doc.go's module list", n)
		}
	}
}
