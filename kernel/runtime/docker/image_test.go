package docker_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

const kernelImage = "glassroom/python-kernel:latest"

func kernelNames(ks []sandbox.KernelSpec) []string {
	var out []string
	for _, k := range ks {
		out = append(out, k.Name)
	}
	return out
}

// refused checks that Start refuses kernel with a SpecError whose reason
// is want, and that no container was made for it.
func refused(t *testing.T, r *docker.Runtime, kernel, want string) {
	t.Helper()
	id := "docker-kernel-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	sb, err := r.Start(context.Background(), sandbox.Spec{ID: id, Kernel: kernel})
	if err == nil {
		sb.Close(context.Background())
		t.Fatalf("kernel %s started", kernel)
	}
	var se *sandbox.SpecError
	if !errors.As(err, &se) || !errors.Is(err, sandbox.ErrBadSpec) || se.Public() != want {
		t.Fatalf("kernel %s: got %v, want a SpecError %q", kernel, err, want)
	}
	if out, err := exec.Command("docker", "ps", "-aq", "--filter", "name="+r.ContainerName(id)).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("a refused kernel left a container: %q %v", out, err)
	}
}

// TestImageHoldsItsKernels: the image images/python/build.sh makes holds
// every kernel of the registry and says so in its label; the runtime
// lists exactly the label's kernels and refuses a kernel glassroom does
// not know (TestKernelNotInImageIsRefused: one the image lacks).
func TestImageHoldsItsKernels(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	label := inspect(t, `{{index .Config.Labels "`+docker.LabelKernels+`"}}`, kernelImage)
	var want []string
	for _, k := range kernels.All() {
		want = append(want, k.Name)
	}
	if label != strings.Join(want, ",") {
		t.Errorf("image label %s=%q, want %q (rebuild it: make image)", docker.LabelKernels, label, strings.Join(want, ","))
	}
	if got := kernelNames(r.Installed()); !slices.Equal(got, want) {
		t.Fatalf("Installed() = %v, want %v", got, want)
	}
	refused(t, r, "cobol", `unknown kernel "cobol"`)
}

// TestKernelNotInImageIsRefused: a runtime over an image that holds
// python3 only (the label says so) lists python3 alone, refuses every
// other kernel naming the image, and still runs python3.
func TestKernelNotInImageIsRefused(t *testing.T) {
	newRuntime(t, docker.Config{}) // skips, or fails in CI, without an engine or the image
	img := "glassroom/test-python-only:" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	ctr := "glassroom-test-commit-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if out, err := exec.Command("docker", "create", "--name", ctr, kernelImage).CombinedOutput(); err != nil {
		t.Fatalf("docker create: %v %s", err, out)
	}
	out, err := exec.Command("docker", "commit", "--change", "LABEL "+docker.LabelKernels+"=python3", ctr, img).CombinedOutput()
	exec.Command("docker", "rm", "-f", ctr).Run()
	if err != nil {
		t.Fatalf("docker commit: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", img).Run() })

	r := newRuntime(t, docker.Config{Image: img})
	if got := kernelNames(r.Installed()); !slices.Equal(got, []string{"python3"}) {
		t.Fatalf("Installed() = %v, want [python3]", got)
	}
	for _, k := range []string{"r", "javascript", "typescript", "bash", "java"} {
		refused(t, r, k, "kernel "+k+" is not installed in image "+img)
	}
	k := runtimetest.Start(t, r, sandbox.Spec{ID: "docker-py-only-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10), Kernel: "python3"})
	if out, _ := k.Run(t, "40 + 2"); out != `"42"` {
		t.Fatalf("40 + 2 = %s", out)
	}
}

// TestKernelsScript: images/python/kernels.sh, which build.sh's
// io.glassroom.kernels label comes from, lists a kernel only when its
// interpreter and its kernel are both in the root filesystem, python3
// first, in the names the runtime knows.
func TestKernelsScript(t *testing.T) {
	files := map[string][]string{
		"python3": {"usr/bin/python3", "usr/lib/python3/dist-packages/ipykernel/__init__.py"},
		"r":       {"usr/bin/R", "usr/lib/R/site-library/IRkernel/DESCRIPTION"},
		"deno":    {"usr/local/bin/deno"},
		"bash":    {"usr/bin/bash"},
		"R alone": {"usr/bin/R"},
	}
	for _, tc := range []struct {
		has  []string
		want string
	}{
		{[]string{"python3"}, "python3"},
		{[]string{"python3", "r", "deno", "bash"}, "python3,r,javascript,typescript,bash"},
		{[]string{"bash", "deno", "R alone"}, "javascript,typescript"}, // bash needs python's ipykernel; R needs IRkernel
		{[]string{"python3", "bash"}, "python3,bash"},
		{nil, ""},
	} {
		root := t.TempDir()
		if err := os.Symlink("usr/bin", filepath.Join(root, "bin")); err != nil { // merged /usr
			t.Fatal(err)
		}
		for _, h := range tc.has {
			for _, f := range files[h] {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		out, err := exec.Command("sh", "../../../images/python/kernels.sh", root).CombinedOutput()
		if err != nil {
			t.Fatalf("kernels.sh: %v %s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("root with %v: kernels.sh says %q, want %q", tc.has, got, tc.want)
		}
		for _, name := range strings.Split(tc.want, ",") {
			if k, ok := sandbox.LookupKernel(name); name != "" && (!ok || k.Name != name) {
				t.Errorf("kernels.sh names %q, which is no kernel's name", name)
			}
		}
	}
}
