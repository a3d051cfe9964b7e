package kernels

import "fmt"

// python is the default kernel: ipykernel, run by the launcher isolated
// from the workspace, with glassroom's structured rich output.
func python() Kernel {
	return Kernel{
		Name:        "python3",
		Aliases:     []string{"python", "py", "python3"},
		DisplayName: "Python 3",
		Label:       "Python",
		Language: LanguageInfo{
			Name: "python", Mimetype: "text/x-python", FileExtension: ".py",
			CodeMirrorMode: map[string]any{"name": "ipython", "version": 3},
			PygmentsLexer:  "ipython3", NbconvertExporter: "python",
		},
		EditorMode:  "python",
		SDKLanguage: "python",
		Launch:      Launch{Kind: IPyKernel},
		Probe:       Probe{Files: []string{"/usr/bin/python3", "/usr/lib/python3/dist-packages/ipykernel/__init__.py"}},
		HostConfig:  []string{"/etc/python3", "/etc/python3.11", "/etc/matplotlibrc"},
		ReservedEnv: []ReservedEnv{
			{"PYTHON", "it steers the Python interpreter at kernel start"},
			{"JUPYTER", "it steers the kernel's start-up"},
			{"JPY_", "it steers the kernel's start-up"},
			{"IPY", "it steers the kernel's start-up"},
			{"PYDEVD", "debugger settings are fixed"},
			{"MPLBACKEND", "glassroom sets it (inline plots)"},
			{"MPLCONFIGDIR", "glassroom sets it"},
		},
		Settings:    &Settings{Apply: pythonApply, Restore: pythonExec(pythonRestoreBody)},
		Snapshot:    pythonSnapshot(),
		JupyterArgv: []string{"python3", "-I", "-m", "ipykernel_launcher", "-f", "{connection_file}"},
		Debugger:    true,
		Smoke: []string{"python3", "-I", "-c", "import ipykernel.kernelapp, ipywidgets, debugpy, tqdm.notebook; " +
			"assert ipywidgets.__version__.startswith('8.'), 'ipywidgets ' + ipywidgets.__version__ + ', want 8'"},
		Hello: "print(6 * 7)",
	}
}

// Python: the code runs by exec in a namespace of its own; the saved state
// is an attribute of sys.
const pythonApplyBody = `import os, sys
pairs = %s
cwd = %s
saved = {"env": [(k, os.environ.get(k)) for k, _ in pairs], "cwd": None}
if cwd is not None:
    try:
        saved["cwd"] = os.getcwd()
    except OSError:
        pass
sys._glassroom_exec_settings = saved
if cwd is not None:
    if not os.path.isdir(cwd):
        raise NotADirectoryError("cwd %%s: no such directory in the sandbox" %% cwd)
    os.chdir(cwd)
for k, v in pairs:
    os.environ[k] = v
`

const pythonRestoreBody = `import os, sys
saved = getattr(sys, "_glassroom_exec_settings", None)
if saved is not None:
    for k, v in saved["env"]:
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    if saved["cwd"] is not None:
        try:
            os.chdir(saved["cwd"])
        except OSError:
            pass
    del sys._glassroom_exec_settings
`

func pythonExec(body string) string {
	return `__import__("builtins").exec(` + jsonLit(body) + `, {})`
}

func pythonApply(envs [][2]string, cwd string) string {
	c := "None"
	if cwd != "" {
		c = jsonLit(cwd)
	}
	return pythonExec(fmt.Sprintf(pythonApplyBody, pairsLit(envs), c))
}
