package sessions

import "github.com/glassroom/glassroom/kernel/runtime/sandbox"

// The kernel kinds a runtime has, named here (as in below.go) so that the
// gateway lists and describes them importing sessions only.

// KernelSpec describes one kind of kernel a runtime can run, a language
// (the sandbox layer's): what Manager.InstalledKernels lists.
type KernelSpec = sandbox.KernelSpec

// DefaultKernel is the kernel of a session that names none.
const DefaultKernel = sandbox.DefaultKernel
