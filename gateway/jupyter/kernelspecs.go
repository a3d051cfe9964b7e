package jupyter

import (
	"net/http"
	"strings"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/sessions"
	"github.com/labstack/echo/v4"
)

// kernelSpecHandlers serve the kernel specs of the kernels the session
// manager's runtime has installed: /api/kernelspecs and the kernels'
// logos (/kernelspecs/{name}/{file}, logos.go). Safe for concurrent use.
type kernelSpecHandlers struct {
	mgr *sessions.Manager
}

// kernelSpec is a kernel spec model.
type kernelSpec struct {
	Name      string            `json:"name"`
	Spec      kernelSpecFile    `json:"spec"`
	Resources map[string]string `json:"resources"`
}

type kernelSpecFile struct {
	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode"`
	Env           map[string]string `json:"env"`
	Metadata      map[string]any    `json:"metadata"`
}

// kernelArgv is how each kernel is launched inside the sandbox, for the
// spec's argv (clients show it; glassroom launches its kernels itself):
// its registry entry's.
func kernelArgv(name string) []string {
	if k, ok := kernels.Lookup(name); ok && k.Name == name {
		return k.JupyterArgv
	}
	return []string{name, "{connection_file}"}
}

// speaksDebugger reports whether kernel name speaks the Jupyter debugger's
// protocol (ipykernel, with debugpy: a dependency of Debian's ipykernel, in
// the kernel image and on a local runtime's host). A kernel's
// kernel_info_reply says whether it really has it.
func speaksDebugger(name string) bool {
	k, ok := kernels.Lookup(name)
	return ok && k.Name == name && k.Debugger
}

// specOf is the spec of an installed kernel: its name, language and
// display name as GET /v1/kernels gives them, and in its metadata the
// runtime and the aliases POST /api/kernels also takes, and "debugger":
// true for a kernel with the Jupyter debugger (what JupyterLab reads to
// offer its debugger, as ipykernel's own kernelspec says it).
func (h *kernelSpecHandlers) specOf(k sessions.KernelSpec) kernelSpec {
	meta := map[string]any{"runtime": h.mgr.RuntimeName()}
	if len(k.Aliases) > 0 {
		meta["aliases"] = k.Aliases
	}
	metadata := map[string]any{"glassroom": meta}
	if speaksDebugger(k.Name) {
		metadata["debugger"] = true
	}
	return kernelSpec{Name: k.Name, Resources: kernelResources(k.Name), Spec: kernelSpecFile{
		Argv:          kernelArgv(k.Name),
		DisplayName:   k.DisplayName + " (glassroom)",
		Language:      k.Language,
		InterruptMode: "message",
		Env:           map[string]string{},
		Metadata:      metadata,
	}}
}

// list is GET /api/kernelspecs: every kernel the gateway's runtime has installed;
// the default is Python's.
func (h *kernelSpecHandlers) list(c echo.Context) error {
	specs := map[string]kernelSpec{}
	for _, k := range h.mgr.InstalledKernels() {
		specs[k.Name] = h.specOf(k)
	}
	return c.JSON(http.StatusOK, map[string]any{"default": sessions.DefaultKernel, "kernelspecs": specs})
}

// get is GET /api/kernelspecs/{name}: an installed kernel's spec, or a
// 404 that names the installed ones.
func (h *kernelSpecHandlers) get(c echo.Context) error {
	installed := h.mgr.InstalledKernels()
	names := make([]string, 0, len(installed))
	for _, k := range installed {
		if k.Name == c.Param("name") {
			return c.JSON(http.StatusOK, h.specOf(k))
		}
		names = append(names, k.Name)
	}
	return httperr.New(http.StatusNotFound, "not_found", "no kernel spec named %q (installed: %s)", c.Param("name"), strings.Join(names, ", "))
}
