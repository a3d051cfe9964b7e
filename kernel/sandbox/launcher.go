package sandbox

import _ "embed"

// launcher is the Python program that starts ipykernel in every runtime.
//
//go:embed launcher.py
var launcher string

// Paths inside every sandbox.
const (
	// IPCDir holds the kernel's unix sockets and its connection file.
	IPCDir = "/run/glassroom/ipc"
	// ConnFile is the connection file; ipykernel rewrites it at start, so
	// it lives in the sandbox-writable IPCDir and is never read back.
	ConnFile = IPCDir + "/" + ConnectionFileName
	// WorkDir is the workspace: the kernel's working directory and HOME.
	WorkDir = "/workspace"
)

// KernelArgv returns the command that starts the kernel with python (an
// absolute path inside the sandbox). The interpreter runs isolated (-I: no
// PYTHON* variables, no user site directory, the working directory is not
// on sys.path while ipykernel loads) and the launcher adds the workspace to
// sys.path only once the kernel is up, so no file in the workspace can
// steer the kernel's start.
func KernelArgv(python string) []string {
	return []string{python, "-I", "-B", "-c", launcher, "-f", ConnFile}
}
