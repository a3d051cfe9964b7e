package sdk_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// jsEnv is the environment of a JS run against g: the gateway, a key,
// and GLASSROOM_TEST_E2BAPI=1 when this tree's gateway describes the
// issue-25 routes (templates, metrics, pause, files-move, files-watch),
// so the SDK's tests of them must pass rather than skip.
func jsEnv(t *testing.T, g *apptest.Gateway) []string {
	env := append(os.Environ(), "GLASSROOM_URL="+g.URL, "GLASSROOM_API_KEY="+apptest.KeyA, "NO_COLOR=1", "NODE_OPTIONS=")
	if g.PreviewAddr != "" {
		env = append(env, "GLASSROOM_PREVIEW_ADDR="+g.PreviewAddr)
	}
	spec, err := os.ReadFile("../gateway/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(spec, []byte(`"/v1/templates"`)) {
		env = append(env, "GLASSROOM_TEST_E2BAPI=1")
	}
	return env
}

// runJS runs name args... in dir with env, killed after ten minutes, and
// returns its combined output; a failed run fails t.
func runJS(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// TestJSSDK runs sdk/js's own test suite (test/*.test.mjs, Node's test
// runner) with the built SDK (dist/) against a real gateway on each
// runtime. npm ci installs the package's lockfile (typescript and the
// optional `ws`, which Node 20 needs: it has no global WebSocket).
func TestJSSDK(t *testing.T) {
	node := testkit.NPMInstall(t, "js")
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{Sessions: sessions.Config{InterruptGrace: time.Second}, Previews: true})
			out := runJS(t, "js", jsEnv(t, g), node, "--test", "--test-reporter=tap", "test/")
			checkTAP(t, out)
		})
	}
}

// checkTAP fails t unless a TAP report says every test passed.
func checkTAP(t *testing.T, out string) {
	t.Helper()
	pass := regexp.MustCompile(`(?m)^# pass (\d+)$`).FindStringSubmatch(out)
	if !strings.Contains(out, "\n# fail 0\n") || pass == nil || pass[1] == "0" {
		t.Fatalf("JS tests did not all pass:\n%s", out)
	}
	t.Logf("%s", lastLines(out, 9))
}

// TestJSSDKDeno runs the same suite under Deno (its node:test support and
// its own WebSocket: no npm package at all).
func TestJSSDKDeno(t *testing.T) {
	testkit.RealThing(t, "deno")
	deno, err := exec.LookPath("deno")
	if err != nil {
		if _, err2 := os.Stat("/usr/local/bin/deno"); err2 != nil {
			testkit.Unavailable(t, "deno is not installed (scripts/install-deno.sh)")
		}
		deno = "/usr/local/bin/deno"
	}
	testkit.NPMInstall(t, "js") // not needed by Deno; keeps dist's type declarations' deps present for editors
	g := apptest.Start(t, apptest.Local(t), apptest.Options{Sessions: sessions.Config{InterruptGrace: time.Second}, Previews: true})
	env := append(jsEnv(t, g), "DENO_NO_UPDATE_CHECK=1", "DENO_DIR="+t.TempDir())
	out := runJS(t, "js", env, deno, "test", "-A", "--no-check", "test/sdk.test.mjs")
	if !regexp.MustCompile(`ok \| \d+ passed \| 0 failed`).MatchString(out) {
		t.Fatalf("deno test:\n%s", out)
	}
	t.Logf("%s", lastLines(out, 2))
}

// TestJSSDKBun runs the same suite under Bun, pinned in js/test/bun's
// lockfile (the npm package `bun` ships the binary).
func TestJSSDKBun(t *testing.T) {
	testkit.NPMInstall(t, "js")
	testkit.NPMInstall(t, "js/test/bun")
	// bun's install script moves the platform package's binary over
	// bin/bun.exe; with scripts off it stays in @oven/bun-<platform>.
	bins, _ := filepath.Glob("js/test/bun/node_modules/@oven/bun-linux-*/bin/bun")
	if exe, err := os.ReadFile("js/test/bun/node_modules/bun/bin/bun.exe"); err == nil && bytes.HasPrefix(exe, []byte("\x7fELF")) {
		bins = append([]string{"js/test/bun/node_modules/bun/bin/bun.exe"}, bins...)
	}
	if len(bins) == 0 {
		testkit.Unavailable(t, "no bun binary for this platform under js/test/bun/node_modules")
	}
	bun, err := filepath.Abs(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	g := apptest.Start(t, apptest.Local(t), apptest.Options{Sessions: sessions.Config{InterruptGrace: time.Second}, Previews: true})
	env := append(jsEnv(t, g), "BUN_INSTALL_CACHE_DIR="+t.TempDir())
	out := runJS(t, "js", env, bun, "test", "--timeout", "120000", "./test/sdk.test.mjs")
	if !regexp.MustCompile(`(?m)^\s*0 fail$`).MatchString(out) || !regexp.MustCompile(`(?m)^\s*[1-9]\d* pass$`).MatchString(out) {
		t.Fatalf("bun test:\n%s", out)
	}
	t.Logf("%s", lastLines(out, 4))
}

// TestJSBuild: the committed js/dist is what the pinned TypeScript
// compiler makes of js/src (a fresh build into a temporary directory,
// compared file by file), so users installing from git get the sources'
// behaviour and `npm run build` is reproducible.
func TestJSBuild(t *testing.T) {
	node := testkit.NPMInstall(t, "js")
	tmp := t.TempDir()
	runJS(t, "js", append(os.Environ(), "NODE_OPTIONS="), node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", ".", "--outDir", tmp)
	fresh := listFiles(t, tmp)
	committed := listFiles(t, "js/dist")
	if strings.Join(fresh, "\n") != strings.Join(committed, "\n") {
		t.Fatalf("js/dist has %v, a fresh build %v: run `npm run build` in sdk/js", committed, fresh)
	}
	for _, f := range fresh {
		a, _ := os.ReadFile(filepath.Join(tmp, f))
		b, _ := os.ReadFile(filepath.Join("js/dist", f))
		if !bytes.Equal(a, b) {
			t.Errorf("js/dist/%s differs from a fresh build: run `npm run build` in sdk/js", f)
		}
	}
}

func listFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		out = append(out, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestJSExamples runs js/examples (a Vercel AI SDK tool, a LangChain.js
// tool) with fake models whose tool calls run code in a real sandbox.
// The examples import the SDK by its package name (a file: dependency),
// so the package's "exports" map is what resolves it.
func TestJSExamples(t *testing.T) {
	testkit.NPMInstall(t, "js")
	node := testkit.NPMInstall(t, "js/examples")
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	out := runJS(t, "js/examples", jsEnv(t, g), node, "--test", "--test-reporter=tap", "examples.test.mjs")
	checkTAP(t, out)
}

// TestJSReadmeSnippet runs the TypeScript example of js/README.md (plain
// JavaScript as it stands) against a real gateway with Node, importing
// the package by name, so the documentation stays true.
func TestJSReadmeSnippet(t *testing.T) {
	node := testkit.NPMInstall(t, "js")
	doc, err := os.ReadFile("js/README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```ts\n(import \\{ Sandbox \\} from 'glassroom'\n.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("js/README.md has no TypeScript example")
	}
	// The repository's README shows the same example.
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	r := regexp.MustCompile("(?s)```ts\n(import \\{ Sandbox \\} from 'glassroom'\n.*?)```").FindSubmatch(readme)
	if r == nil || !bytes.Equal(r[1], m[1]) {
		t.Fatalf("README.md's TypeScript example is missing or differs from js/README.md's")
	}
	// A module inside js/ resolves 'glassroom' to the package itself.
	script := filepath.Join("js", "readme-snippet.test-tmp.mjs")
	if err := os.WriteFile(script, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(script) })
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	out := runJS(t, "js", jsEnv(t, g), node, filepath.Base(script))
	if !strings.Contains(out, "30\n") || !strings.Contains(out, "{ month: [ 'Jan', 'Feb' ], total: [ 10, 20 ] }") {
		t.Fatalf("README example printed:\n%s", out)
	}
}
