package web_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
)

// TestTypeCheck runs the TypeScript compiler that package.json pins over
// the UI's modules (tsconfig.json: strict, JSDoc types, nothing emitted):
// every file in static/js must start with // @ts-check, be part of the
// check and pass it. The first run installs the compiler with `npm ci`
// (node_modules, kept while package-lock.json is unchanged, so later runs
// need no network); without node or npm it skips loudly, or fails in CI.
func TestTypeCheck(t *testing.T) {
	mods, err := filepath.Glob("static/js/*.js")
	if err != nil || len(mods) < 5 {
		t.Fatalf("modules under static/js: %v (%v)", mods, err)
	}
	for _, name := range mods {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(src), "// @ts-check\n") {
			t.Errorf("%s does not start with // @ts-check", name)
		}
	}

	raw, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ DevDependencies map[string]string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	pinned := pkg.DevDependencies["typescript"]
	if pinned == "" || strings.ContainsAny(pinned, "^~<>=*x ") {
		t.Fatalf("package.json must pin typescript to an exact version, has %q", pinned)
	}

	node := testkit.NPMInstall(t, ".")
	tsc := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("node_modules", "typescript", "bin", "tsc")}, args...)...)
		cmd.Env = append(os.Environ(), "NODE_OPTIONS=", "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	if out, err := tsc("--version"); err != nil || strings.TrimSpace(out) != "Version "+pinned {
		t.Fatalf("tsc --version: %v %q, package.json pins %s", err, out, pinned)
	}

	// Every module is in the program (the config leaves none out).
	out, err := tsc("-p", ".", "--listFilesOnly")
	if err != nil {
		t.Fatalf("tsc --listFilesOnly: %v\n%s", err, out)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Fields(out)
	for _, name := range mods {
		if !slices.Contains(listed, filepath.Join(wd, name)) {
			t.Errorf("%s is not type-checked (tsconfig.json include)", name)
		}
	}

	if out, err := tsc("-p", ".", "--pretty", "false"); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("tsc -p web: %v\n%s", err, out)
	}
	t.Logf("tsc %s: %d modules type-check", pinned, len(mods))
}

var (
	entryExports = regexp.MustCompile(`(?s)\bexport\s*\{([^}]*)\}`)
	declaredVal  = regexp.MustCompile(`(?m)^export declare (?:const|function|class) (\w+)`)
)

// The hand-written declarations of the vendor bundle (static/vendor/
// vendor.d.ts) declare only what web/vendor/entry.js exports: a name the
// bundle lacks would type-check and fail in the browser.
func TestVendorDeclarations(t *testing.T) {
	entry, err := os.ReadFile("vendor/entry.js")
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, m := range entryExports.FindAllStringSubmatch(string(entry), -1) {
		for _, spec := range strings.Split(m[1], ",") {
			if f := strings.Fields(spec); len(f) > 0 {
				exported[f[len(f)-1]] = true // "x" or "default as x"
			}
		}
	}
	decl, err := os.ReadFile("static/vendor/vendor.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	names := declaredVal.FindAllStringSubmatch(string(decl), -1)
	if len(exported) < 10 || len(names) < 10 {
		t.Fatalf("found %d exports in entry.js and %d declarations in vendor.d.ts", len(exported), len(names))
	}
	for _, m := range names {
		if !exported[m[1]] {
			t.Errorf("vendor.d.ts declares %s, which vendor/entry.js does not export", m[1])
		}
	}
}
