package apptest

import (
	"testing"

	"github.com/glassroom/glassroom/testkit"
)

// NeedKernel ends a test whose kernel (a sandbox.KernelSpec name) g's
// runtime has not installed, as testkit.Unavailable does: a loud skip, or
// a failure when CI=true. Call it in the subtest of that language, so that
// the others run.
func (g *Gateway) NeedKernel(t testing.TB, name string) {
	t.Helper()
	for _, k := range g.Manager.InstalledKernels() {
		if k.Name == name {
			return
		}
	}
	testkit.Unavailable(t, "the %s kernel is not installed on the %s runtime (installed: %v)", name, g.Manager.RuntimeName(), kernelNames(g))
}

func kernelNames(g *Gateway) []string {
	var out []string
	for _, k := range g.Manager.InstalledKernels() {
		out = append(out, k.Name)
	}
	return out
}

// Languages are the kernels glassroom ships besides Python, for tests
// that go through each.
func Languages() []string { return []string{"r", "javascript", "typescript", "bash"} }

// Print42 returns code, in the language of kernel, that prints "42" and a
// newline on stdout and nothing else ("" for a kernel it does not know).
func Print42(kernel string) string {
	switch kernel {
	case "python3":
		return "print(6 * 7)"
	case "r":
		return "cat(6 * 7, \"\\n\", sep = \"\")"
	case "javascript":
		return "console.log(6 * 7)"
	case "typescript":
		return "const n: number = 6 * 7\nconsole.log(n)"
	case "bash":
		return "echo $((6 * 7))"
	}
	return ""
}
