package sandbox

import (
	"context"
	"path"
	"regexp"
	"strings"

	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/workspace"
)

// KernelSpec describes one kind of kernel a sandbox can run: a language.
type KernelSpec struct {
	// Name is the kernelspec name (what Jupyter clients send and list).
	Name string `json:"name"`
	// Language is the language's name as the kernel reports it.
	Language string `json:"language"`
	// DisplayName is the name shown to people.
	DisplayName string `json:"display_name"`
	// Aliases are other names clients use for it (E2B's "js", "ts", ...).
	Aliases []string `json:"aliases,omitempty"`
}

// DefaultKernel is the kernel of a session that names none.
const DefaultKernel = kernels.Default

// Kernels returns every kernel glassroom knows how to launch (the kernel
// registry, package kernels), the default first. Whether a runtime has
// it installed is the runtime's to say (KernelLister). The slice is
// fresh: the caller may keep it.
func Kernels() []KernelSpec {
	var out []KernelSpec
	for _, k := range kernels.All() {
		out = append(out, specOf(k))
	}
	return out
}

func specOf(k kernels.Kernel) KernelSpec {
	return KernelSpec{Name: k.Name, Language: k.Language.Name, DisplayName: k.DisplayName, Aliases: k.Aliases}
}

// LookupKernel finds a kernel by its name or one of its aliases, ignoring
// case.
func LookupKernel(name string) (KernelSpec, bool) {
	k, ok := kernels.Lookup(name)
	if !ok {
		return KernelSpec{}, false
	}
	return specOf(k), true
}

// KernelLister is implemented by runtimes that know which kernels they can
// start (the local runtime looks for each language's interpreter on the
// host; an image has what it was built with). A runtime without it starts
// only DefaultKernel.
type KernelLister interface {
	// Installed returns the kernels this runtime can start, the default
	// first.
	Installed() []KernelSpec
}

// ContextSpec describes one more kernel to start in a running sandbox.
type ContextSpec struct {
	// Name identifies the context within its sandbox (ContextPattern); the
	// runtime derives its paths from it.
	Name string
	// Kernel is the kernel's canonical name (KernelSpec.Name).
	Kernel string
	// Cwd is the kernel's working directory inside the sandbox: WorkDir or
	// a directory under it; "" means WorkDir.
	Cwd string
}

// ContextPattern is the shape of a ContextSpec's Name.
var ContextPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Validate checks the name, that the kernel is known, and that Cwd is
// WorkDir or under it (WorkspaceAlias is accepted for WorkDir), and
// returns the spec with Cwd made canonical.
func (c ContextSpec) Validate() (ContextSpec, error) {
	if !ContextPattern.MatchString(c.Name) {
		return c, badSpec("context name %q", c.Name)
	}
	k, ok := LookupKernel(c.Kernel)
	if !ok || k.Name != c.Kernel {
		return c, badSpec("unknown kernel %q", c.Kernel)
	}
	cwd, err := SandboxPath(c.Cwd)
	if err != nil {
		return c, err
	}
	c.Cwd = cwd
	return c, nil
}

// SandboxPath makes p, a path a client gave for a place in the workspace,
// the canonical absolute path inside the sandbox: "" and relative paths are
// under WorkDir, WorkspaceAlias stands for WorkDir, and nothing may leave
// it ("..", other absolute paths).
func SandboxPath(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", badSpec("path has a NUL byte")
	}
	if p == "" {
		return WorkDir, nil
	}
	if !path.IsAbs(p) {
		p = WorkDir + "/" + p
	}
	p = path.Clean(p)
	for _, root := range []string{WorkDir, WorkspaceAlias} {
		if p == root {
			return WorkDir, nil
		}
		if rest, ok := strings.CutPrefix(p, root+"/"); ok {
			return WorkDir + "/" + rest, nil
		}
	}
	return "", badSpec("path %q is outside %s%s", p, WorkDir, workspace.OutsideHint(p))
}

// ContextStarter is implemented by sandboxes that hold more than one
// kernel: each context is another kernel process in the same sandbox (the
// same uid, workspace, network policy and resource limits, which all the
// sandbox's kernels share), with its own connection.
type ContextStarter interface {
	// StartContext starts a kernel for spec (validated with
	// ContextSpec.Validate by the caller) and blocks until its sockets
	// accept, like Runtime.Start. The result's Restart and Close act on
	// that kernel alone; its Workspace and Limits are the sandbox's. The
	// caller must Close it; closing the sandbox ends it too. It is safe
	// for concurrent use; it fails with ErrClosed once the sandbox is
	// closed, and with a *SpecError when the kernel is not installed.
	StartContext(ctx context.Context, spec ContextSpec) (Sandbox, error)
}

// StartCounter is a runtime that counts how it started its kernels: a
// runtime with a fork server (the local runtime) forks python3 kernels
// from a template, and counts each that it exec'd instead with the
// reason.
type StartCounter interface {
	// KernelStarts returns the counts so far, in no order. Safe for
	// concurrent use.
	KernelStarts() []StartCount
}

// StartCount is how many kernels started one way.
type StartCount struct {
	// Path is "forked" (from the template) or "exec" (an interpreter of
	// its own).
	Path string
	// Reason is why a kernel was exec'd:
	// "kernel" (not a python3 kernel), "env", "limits" or "template" (see
	// the runtime); "" for a forked one.
	Reason string
	N      uint64
}
