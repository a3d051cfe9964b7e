package python_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/kernel/kernels"
)

// TestKernelsScriptMatchesRegistry: kernels.sh (the Dockerfile's probe,
// where there is no glassroom binary) finds what the registry's probes
// find: in a root holding every kernel's files, all of them in the
// registry's order; in a root holding one kernel's files only, that
// kernel (and those whose files are the same: JavaScript and TypeScript
// are one Deno); in an empty root, none.
func TestKernelsScriptMatchesRegistry(t *testing.T) {
	all := kernels.All()
	build := func(t *testing.T, only []kernels.Kernel) string {
		root := t.TempDir()
		for _, k := range only {
			for _, p := range append(append(slices.Clone(k.Probe.Files), k.Probe.Executables...), k.Probe.AnyOf[:min(1, len(k.Probe.AnyOf))]...) {
				path := filepath.Join(root, strings.ReplaceAll(p, "*", "17-x"))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, nil, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		return root
	}
	probe := func(t *testing.T, root string) (script, registry string) {
		out, err := exec.Command("sh", "kernels.sh", root).CombinedOutput()
		if err != nil {
			t.Fatalf("kernels.sh: %v: %s", err, out)
		}
		var names []string
		for _, k := range all {
			if k.Probe.Found(root) {
				names = append(names, k.Name)
			}
		}
		return strings.TrimSpace(string(out)), strings.Join(names, ",")
	}
	if script, registry := probe(t, build(t, all)); script != registry || len(strings.Split(registry, ",")) != len(all) {
		t.Fatalf("every kernel's files: kernels.sh %q, registry %q", script, registry)
	}
	if script, registry := probe(t, build(t, nil)); script != "" || registry != "" {
		t.Fatalf("an empty root: kernels.sh %q, registry %q", script, registry)
	}
	for _, k := range all {
		t.Run(k.Name+" only", func(t *testing.T) {
			script, registry := probe(t, build(t, []kernels.Kernel{k}))
			if script != registry || !slices.Contains(strings.Split(registry, ","), k.Name) {
				t.Fatalf("kernels.sh %q, registry %q", script, registry)
			}
		})
	}
}
