package local

import (
	"fmt"
	"os"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Where the launcher finds each language's interpreter inside the
// sandbox, which sees the host's /usr (see sandbox's launcher.py).
const (
	rBinary    = "/usr/bin/R"
	denoBinary = "/usr/local/bin/deno"
)

// irkernelDirs are the R libraries IRkernel may be installed in (Debian's
// r-cran-irkernel, a CRAN install as root, R's own library).
var irkernelDirs = []string{"/usr/lib/R/site-library/IRkernel", "/usr/local/lib/R/site-library/IRkernel", "/usr/lib/R/library/IRkernel"}

// Installed implements sandbox.KernelLister: python3 (the runtime's
// Python, which it needs anyway) and bash (a Python kernel) always; r when
// R and IRkernel are installed on the host; javascript and typescript when
// Deno is at /usr/local/bin/deno (scripts/install-deno.sh). It looks at
// the host on every call, so a language installed while the gateway runs
// is offered from then on.
func (r *Runtime) Installed() []sandbox.KernelSpec {
	var out []sandbox.KernelSpec
	for _, k := range sandbox.Kernels() {
		if kernelInstalled(k.Name) {
			out = append(out, k)
		}
	}
	return out
}

// kernelInstalled reports whether the kernel named name (canonical) can
// start here.
func kernelInstalled(name string) bool {
	switch name {
	case sandbox.DefaultKernel, "bash":
		return true
	case "r":
		if !executable(rBinary) {
			return false
		}
		for _, d := range irkernelDirs {
			if st, err := os.Stat(d + "/DESCRIPTION"); err == nil && st.Mode().IsRegular() {
				return true
			}
		}
		return false
	case "javascript", "typescript":
		return executable(denoBinary)
	}
	return false
}

func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// checkKernel refuses a kernel this host cannot start, with a SpecError
// naming it.
func checkKernel(name string) error {
	if name == "" || kernelInstalled(name) {
		return nil
	}
	return &sandbox.SpecError{Reason: fmt.Sprintf("kernel %s is not installed", name)}
}

// needsAddressSpace reports whether the kernel's runtime reserves far
// more virtual memory than it uses (V8's heap cages and sandbox), so that
// no RLIMIT_AS lets it start: its memory is bounded by the sandbox's
// cgroup only. With a cgroup every sandbox's address-space limit is soft
// (a Deno kernel started in a Python sandbox lifts it); without one, a
// sandbox whose first kernel is such has none, and no other sandbox can
// start such a kernel.
func needsAddressSpace(kernel string) bool {
	return kernel == "javascript" || kernel == "typescript"
}
