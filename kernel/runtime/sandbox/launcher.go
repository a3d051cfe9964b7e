package sandbox

import (
	_ "embed"
	"encoding/json"
	"strings"

	"github.com/glassroom/glassroom/kernel/kernels"

	"github.com/glassroom/glassroom/workspace"
)

// launcher is the Python program that starts ipykernel in every runtime.
//
//go:embed launcher.py
var launcher string

// richOutput is the python3 kernel's structured rich output: display
// formatters that add a chart's JSON to a matplotlib figure and a
// frame's JSON to a pandas DataFrame (ChartMIME, DataFrameMIME).
//
//go:embed richoutput.py
var richOutput string

// The MIME types of the python3 kernel's structured rich output, beside
// image/png and text/html in the same display bundle.
const (
	ChartMIME     = "application/vnd.glassroom.chart+json"
	DataFrameMIME = "application/vnd.glassroom.dataframe+json"
)

// Paths inside every sandbox.
const (
	// IPCDir holds the kernel's unix sockets and its connection file.
	IPCDir = "/run/glassroom/ipc"
	// ConnFile is the connection file; ipykernel rewrites it at start, so
	// it lives in the sandbox-writable IPCDir and is never read back.
	ConnFile = IPCDir + "/" + ConnectionFileName
	// WorkDir is the workspace: the kernels' working directory and HOME
	// (E2B's convention, which most generated code assumes).
	WorkDir = workspace.SandboxRoot
	// WorkspaceAlias is the workspace again, where glassroom put it before
	// (every runtime binds the same directory there too).
	WorkspaceAlias = workspace.SandboxAlias
	// EgressDir is where the directory of the session's egress proxy
	// socket is bound, read-only, when the session has a network
	// (Spec.EgressSocket).
	EgressDir = "/run/glassroom/egress"
	// EgressSocketEnv names the variable that gives the launcher the
	// proxy's socket inside the sandbox; set, it starts the forwarder and
	// points HTTP_PROXY, HTTPS_PROXY (and their lower-case twins) at it.
	// Sessions cannot set it (GLASSROOM* is reserved).
	EgressSocketEnv = "GLASSROOM_EGRESS_SOCKET"
	// EgressProxyPort is where the launcher's egress forwarder listens on
	// the sandbox's loopback (PROXY_PORT in launcher.py).
	EgressProxyPort = 3128
	// ContextsDir is where a runtime whose kernels share one file system
	// view (a container) binds Dirs.Contexts: the ipc directory of the
	// context name is ContextsDir/name there.
	ContextsDir = "/run/glassroom/ctx"
	// FontCacheDir is where a runtime may bind, read-only, a directory of
	// matplotlib font lists (fontlist-v*.json) built outside the sandbox:
	// each kernel start copies them into its fresh matplotlib directory
	// (MPLCONFIGDIR) rather than scan the fonts again.
	FontCacheDir = "/run/glassroom/mpl"
)

// KernelArgv returns the command that starts the kernel with python (an
// absolute path inside the sandbox), as its definition in the kernel
// registry (package kernels) says. The interpreter runs isolated (-I: no
// PYTHON* variables, no user site directory, the working directory is not
// on sys.path while ipykernel loads) and the launcher adds the workspace to
// sys.path only once the kernel is up, so no file in the workspace can
// steer the kernel's start.
//
//   - The python3 kernel (kernels.IPyKernel: --ipykernel) is given its
//     structured rich output (richoutput.py, --rich), which it registers
//     in IPython before the workspace joins sys.path.
//   - A program of ours (kernels.Program: the bash and java kernels) is
//     given whole (--code), and the launcher runs it in its own process
//     once it has started the egress forwarder.
//   - A bridged kernel (kernels.Bridged: R, Deno) is given its profile as
//     JSON (--bridge): the launcher starts it as its child, as hardened,
//     and bridges the connection file's unix sockets to it; it exits as
//     the kernel does.
//
// Everything travels on the command line: nothing in the sandbox can
// change what starts. kernel is the canonical name of the kernel to start
// ("" is DefaultKernel; an unknown one makes the launcher exit with a
// reason) and connFile the connection file's path inside the sandbox
// (ConnFile for a sandbox's first kernel).
func KernelArgv(python, kernel, connFile string) []string {
	if kernel == "" {
		kernel = DefaultKernel
	}
	argv := []string{python, "-I", "-B", "-c", launcherCode(), "--kernel", kernel}
	k, ok := kernels.Lookup(kernel)
	switch {
	case !ok || k.Name != kernel:
	case k.Launch.Kind == kernels.IPyKernel:
		argv = append(argv, "--ipykernel", "--rich", richOutputCode())
	case k.Launch.Kind == kernels.Program:
		argv = append(argv, "--code", WithoutComments("# glassroom "+k.Name+" kernel\n", k.Launch.Program))
	case k.Launch.Kind == kernels.Bridged:
		profile, _ := json.Marshal(k.Launch.Bridge) // strings, bools and maps of strings: it cannot fail
		argv = append(argv, "--bridge", string(profile))
	}
	return append(argv, "-f", connFile)
}

// LauncherCode is the launcher's code as KernelArgv gives it to python
// (-c): a runtime that forks kernels from a template loads it there.
func LauncherCode() string { return launcherCode() }

// launcherCode is the launcher without its comment lines and blank lines
// (the command line shows in process listings and container inspection).
// The launcher has no multi-line strings, so this is safe.
func launcherCode() string {
	return WithoutComments("# glassroom kernel launcher\n", launcher)
}

// richOutputCode is richoutput.py stripped like launcherCode; it has no
// multi-line strings either.
func richOutputCode() string {
	return WithoutComments("# glassroom rich output\n", richOutput)
}

// WithoutComments returns header followed by src less its comment lines
// and blank lines.
func WithoutComments(header, src string) string {
	var b strings.Builder
	b.WriteString(header)
	for _, line := range strings.Split(src, "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}
