package apptest

import (
	"testing"

	"github.com/glassroom/glassroom/kernel/kernels"
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

// Languages are the kernels glassroom ships besides Python (the kernel
// registry's), for tests that go through each.
func Languages() []string {
	var out []string
	for _, k := range kernels.All() {
		if k.Name != kernels.Default {
			out = append(out, k.Name)
		}
	}
	return out
}

// Print42 returns code, in the language of kernel, that prints "42" and a
// newline on stdout and nothing else ("" for a kernel it does not know).
func Print42(kernel string) string {
	k, ok := kernels.Lookup(kernel)
	if !ok {
		return ""
	}
	return k.Hello
}
