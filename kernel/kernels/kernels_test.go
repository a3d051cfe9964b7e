package kernels_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
)

// repo is the repository's root, from this package's directory.
const repo = "../.."

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRegistryIsComplete walks the registry: each kernel has what the
// rest of the house needs of it, so that a kernel added here and
// forgotten elsewhere fails this fast test instead of being skipped. The
// places it checks are the steps of docs/architecture.md's "Adding a
// kernel".
func TestRegistryIsComplete(t *testing.T) {
	all := kernels.All()
	if len(all) == 0 || all[0].Name != kernels.Default {
		t.Fatalf("the registry must list %s first", kernels.Default)
	}
	conformance := map[string]bool{}
	for _, l := range runtimetest.Languages() {
		conformance[l.Kernel] = true
	}
	languagesDoc := read(t, "docs/languages.md")
	pySDK := read(t, "sdk/python/glassroom/e2b/models.py")
	jsSDK := read(t, "sdk/js/src/sandbox.ts")
	editor := read(t, "web/static/js/editor.js")
	names := map[string]string{}
	for _, k := range all {
		t.Run(k.Name, func(t *testing.T) {
			for _, n := range append([]string{k.Name}, k.Aliases...) {
				if n != strings.ToLower(n) || strings.TrimSpace(n) != n || n == "" {
					t.Errorf("name or alias %q: lower case, no spaces", n)
				}
				if other, ok := names[n]; ok && other != k.Name {
					t.Errorf("%q names both %s and %s", n, other, k.Name)
				}
				names[n] = k.Name
			}
			if got, ok := kernels.Lookup(" " + strings.ToUpper(k.Name) + " "); !ok || got.Name != k.Name {
				t.Errorf("Lookup does not find %s", k.Name)
			}
			if k.DisplayName == "" || k.Label == "" || k.Hello == "" || len(k.Smoke) == 0 || len(k.JupyterArgv) == 0 {
				t.Errorf("display name, label, Hello, Smoke and JupyterArgv are required: %+v", k)
			}
			for _, a := range k.Smoke { // glassroom kernels --smoke prints one argument a line
				if strings.ContainsAny(a, "\n\x00") {
					t.Errorf("smoke argument %q holds a newline or NUL", a)
				}
			}
			li := k.Language
			if li.Name == "" || li.Mimetype == "" || !strings.HasPrefix(li.FileExtension, ".") {
				t.Errorf("language_info needs name, mimetype and file_extension: %+v", li)
			}
			if k.Settings == nil || k.Settings.Apply == nil || k.Settings.Restore == "" {
				t.Errorf("no per-execution settings (envs, cwd)")
			}
			for _, r := range k.ReservedEnv {
				if r.Prefix == "" || r.Prefix != strings.ToUpper(r.Prefix) || r.Why == "" {
					t.Errorf("reserved env %+v: an upper-case prefix and a reason", r)
				}
			}
			switch k.Launch.Kind {
			case kernels.IPyKernel:
			case kernels.Program:
				if k.Launch.Program == "" || strings.Contains(k.Launch.Program, `"""`) || strings.Contains(k.Launch.Program, "'''") {
					t.Errorf("a program kernel needs its code, without multi-line strings (comment lines are dropped)")
				}
			case kernels.Bridged:
				p := k.Launch.Bridge
				if p == nil || len(p.Argv) == 0 || (p.Transport != "ipc" && p.Transport != "tcp") ||
					(p.Heartbeat != "kernel" && p.Heartbeat != "bridge") || (p.Interrupt != "message" && p.Interrupt != "signal") {
					t.Fatalf("bridge profile: %+v", p)
				}
				if _, err := json.Marshal(p); err != nil {
					t.Errorf("bridge profile: %v", err)
				}
				if p.Transport == "ipc" && p.ChdirCode != "" {
					t.Errorf("a kernel that binds the gateway's sockets starts in its working directory: no chdir_code")
				}
				for _, code := range []string{p.ChdirCode, p.SyncCode} {
					if code != "" && strings.Count(code, "%s") != 1 {
						t.Errorf("%q: one %%s", code)
					}
				}
			default:
				t.Errorf("launch kind %d", k.Launch.Kind)
			}
			if !conformance[k.Name] {
				t.Errorf("no entry in runtimetest.Languages (the shared language suite)")
			}
			logos, _ := filepath.Glob(filepath.Join(repo, "gateway/jupyter/logos", k.Name, "logo-*"))
			if len(logos) < 3 {
				t.Errorf("logos: %v (logo-32x32.png, logo-64x64.png, logo-svg.svg)", logos)
			}
			if !regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(k.Name) + "`").MatchString(languagesDoc) {
				t.Errorf("no row in docs/languages.md's table of kernels")
			}
			if q := `"` + k.SDKLanguage + `"`; k.SDKLanguage == "" || !strings.Contains(pySDK, q) {
				t.Errorf("SDK language %q not in the Python SDK's RunCodeLanguage", k.SDKLanguage)
			}
			if q := `'` + k.SDKLanguage + `'`; !strings.Contains(jsSDK, q) {
				t.Errorf("SDK language %q not in the JS SDK's RunCodeLanguage", k.SDKLanguage)
			}
			if k.EditorMode != "" && !strings.Contains(editor, "\n  "+k.EditorMode+": ") {
				t.Errorf("editor mode %q is not one of web/static/js/editor.js's MODES", k.EditorMode)
			}
		})
	}
}

// TestProbe: a root file system has a kernel when its files are there
// (globs match, executables have an execute bit, one of AnyOf).
func TestProbe(t *testing.T) {
	root := t.TempDir()
	p := kernels.Probe{Executables: []string{"/opt/x-*/bin/run"}, Files: []string{"/lib/data"}, AnyOf: []string{"/a", "/b"}}
	write := func(rel string, mode os.FileMode) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		rel  string
		mode os.FileMode
		want bool
	}{
		{"opt/x-17/bin/run", 0o644, false}, // not executable
		{"opt/x-18/bin/run", 0o755, false},
		{"lib/data", 0o644, false}, // none of AnyOf
		{"b", 0o644, true},
	}
	for _, s := range steps {
		write(s.rel, s.mode)
		if got := p.Found(root); got != s.want {
			t.Fatalf("after %s: Found = %v, want %v", s.rel, got, s.want)
		}
	}
}
