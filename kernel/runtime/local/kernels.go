package local

import (
	"fmt"

	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Installed implements sandbox.KernelLister: the kernels of the registry
// whose files are on the host (kernels.Probe; the sandbox sees the host's
// /usr), python3 always (the runtime's Python, which it needs anyway). It
// looks at the host on every call, so a language installed while the
// gateway runs is offered from then on.
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
	if name == sandbox.DefaultKernel {
		return true
	}
	k, ok := kernels.Lookup(name)
	return ok && k.Name == name && k.Probe.Found("/")
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
// more virtual memory than it uses (kernels.Kernel.NeedsAddressSpace),
// so that no RLIMIT_AS lets it start: its memory is bounded by the
// sandbox's cgroup only. With a cgroup every sandbox's address-space
// limit is soft (a Deno kernel started in a Python sandbox lifts it);
// without one, a sandbox whose first kernel is such has none, and no
// other sandbox can start such a kernel.
func needsAddressSpace(kernel string) bool {
	k, ok := kernels.Lookup(kernel)
	return ok && k.NeedsAddressSpace
}
