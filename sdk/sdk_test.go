package sdk_test

import (
	"bytes"
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
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPythonSDK runs the Python SDK's unittest suite (sdk/python/tests,
// the user guide's example among them) with Debian's python3 against a
// real gateway on each runtime.
func TestPythonSDK(t *testing.T) {
	py := testkit.Python(t, "websocket", "numpy")
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{Sessions: sessions.Config{InterruptGrace: time.Second}, Previews: true})
			cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
			cmd.Dir = "python"
			cmd.Env = append(os.Environ(), "PYTHONPATH="+mustAbs(t, "python"), "GLASSROOM_URL="+g.URL,
				"GLASSROOM_API_KEY="+apptest.KeyA, "PYTHONDONTWRITEBYTECODE=1", "GLASSROOM_PREVIEW_ADDR="+g.PreviewAddr)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "\nOK") {
				t.Fatalf("python SDK tests: %v\n%s", err, out)
			}
			t.Logf("%s", lastLines(string(out), 3))
		})
	}
}

// TestPipInstall installs the SDK with pip into a fresh virtual
// environment (offline: Debian's setuptools, no build isolation, no index)
// and runs the guide's example with it, from outside the source tree.
func TestPipInstall(t *testing.T) {
	py := testkit.Python(t, "websocket", "venv", "ensurepip", "setuptools", "wheel")
	tmp := t.TempDir()
	// Build from a copy: pip writes build/ and *.egg-info next to the sources.
	src := filepath.Join(tmp, "src")
	if out, err := exec.Command("cp", "-r", "python", src).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	venv := filepath.Join(tmp, "venv")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run(py, "-m", "venv", "--system-site-packages", venv)
	vpy := filepath.Join(venv, "bin", "python")
	run(vpy, "-m", "pip", "install", "--no-build-isolation", "--no-index", src)
	where := run(vpy, "-c", "import glassroom, os; d = os.path.dirname(glassroom.__file__); "+
		"print(d); assert os.path.exists(os.path.join(d, 'py.typed'))")
	if !strings.Contains(where, filepath.Join(venv, "lib")) {
		t.Fatalf("glassroom imported from %s, not the venv", where)
	}
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	cmd := exec.Command(vpy, mustAbs(t, "python/tests/guide_example.py"))
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GLASSROOM_URL="+g.URL, "GLASSROOM_API_KEY="+apptest.KeyA)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "均值: 46.57") {
		t.Fatalf("guide example with the installed SDK: %v\n%s", err, out)
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestReadmeSnippet runs the Python SDK example of docs/clients.md
// against a real gateway, so the documentation stays true; the README's
// copy must be the same.
func TestReadmeSnippet(t *testing.T) {
	py := testkit.Python(t, "websocket", "pandas", "matplotlib")
	doc, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)```python\n(from glassroom import Sandbox.*?)```")
	m := re.FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/clients.md has no Python SDK example")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range re.FindAllSubmatch(readme, -1) {
		if !bytes.Equal(r[1], m[1]) {
			t.Fatalf("README's Python SDK example differs from docs/clients.md's:\n%s", r[1])
		}
	}
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	dir := t.TempDir()
	cmd := exec.Command(py, "-c", string(m[1]))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+mustAbs(t, "python"), "GLASSROOM_URL="+g.URL, "GLASSROOM_API_KEY="+apptest.KeyA)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "30\n") {
		t.Fatalf("docs/clients.md example: %v\n%s", err, out)
	}
	png, err := os.ReadFile(filepath.Join(dir, "chart.png"))
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("chart.png: %v", err)
	}
}
