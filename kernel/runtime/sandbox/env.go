package sandbox

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// Limits on a session's environment.
const (
	MaxEnvVars       = 128
	MaxEnvValueBytes = 32 << 10
)

// reservedEnv lists the names a session may not set, by prefix (upper
// case), with the reason given to the client. They steer the interpreter,
// the loader or the kernel's start, or glassroom sets them itself.
var reservedEnv = []struct{ prefix, why string }{
	{"PYTHON", "it steers the Python interpreter at kernel start"},
	{"LD_", "it steers the dynamic loader"},
	{"GCONV_PATH", "it steers the C library"},
	{"GLIBC_", "it steers the C library"},
	{"MALLOC_", "it steers the C library"},
	{"LOCPATH", "it steers the C library"},
	{"NLSPATH", "it steers the C library"},
	{"HOSTALIASES", "it steers the C library"},
	{"RES_OPTIONS", "it steers the C library"},
	{"LOCALDOMAIN", "it steers the C library"},
	{"R_", "it steers R at kernel start"},
	{"DENO_", "it steers Deno at kernel start"},
	{"NODE_OPTIONS", "it steers Deno at kernel start"},
	{"NODE_ICU_DATA", "it steers Deno at kernel start"},
	{"NODE_CHANNEL_", "it steers Deno at kernel start"},
	{"NODE_UNIQUE_ID", "it steers Deno at kernel start"},
	{"NODE_CLUSTER", "it steers Deno at kernel start"},
	{"JUPYTER", "it steers the kernel's start-up"},
	{"JPY_", "it steers the kernel's start-up"},
	{"IPY", "it steers the kernel's start-up"},
	{"PYDEVD", "debugger settings are fixed"},
	{"MPLBACKEND", "glassroom sets it (inline plots)"},
	{"MPLCONFIGDIR", "glassroom sets it"},
	{"XDG_", "glassroom sets it (caches stay out of the workspace)"},
	{"GLASSROOM", "it is reserved"},
	{"BASH_ENV", "it steers shells started by the code"},
	{"BASH_FUNC_", "it steers shells started by the code"},
	{"ENV", "it steers shells started by the code"},
	{"HTTP_PROXY", "network access comes from the session's network policy"},
	{"HTTPS_PROXY", "network access comes from the session's network policy"},
	{"ALL_PROXY", "network access comes from the session's network policy"},
	{"NO_PROXY", "network access comes from the session's network policy"},
}

// reservedExact lists single reserved names (upper case).
var reservedExact = map[string]string{
	"PATH": "glassroom sets it", "HOME": "glassroom sets it", "USER": "glassroom sets it",
	"LOGNAME": "glassroom sets it", "SHELL": "glassroom sets it", "TMPDIR": "glassroom sets it",
}

// CheckEnv applies the environment policy to a session's variables: names
// of letters, digits and underscores, at most MaxEnvVars values of at most
// MaxEnvValueBytes without NUL bytes, and none of the reserved names. The
// error says which variable was refused and why.
func CheckEnv(env map[string]string) error {
	if len(env) > MaxEnvVars {
		return badSpec("more than %d environment variables", MaxEnvVars)
	}
	for k, v := range env {
		if !envName.MatchString(k) {
			return badSpec("environment name %q (letters, digits and _ only)", k)
		}
		up := strings.ToUpper(k)
		if why, ok := reservedExact[up]; ok {
			return badSpec("environment variable %s may not be set: %s", k, why)
		}
		for _, r := range reservedEnv {
			if strings.HasPrefix(up, r.prefix) {
				return badSpec("environment variable %s may not be set: %s", k, r.why)
			}
		}
		if len(v) > MaxEnvValueBytes {
			return badSpec("environment value of %s over %d bytes", k, MaxEnvValueBytes)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return badSpec("environment value of %s has a NUL byte", k)
		}
	}
	return nil
}

// UserBin is where pip puts the scripts of the packages it installs (the
// user base's bin, in the workspace): last on PATH, after the system's.
const UserBin = WorkDir + "/.local/bin"

// NoNetworkPip is what pip says, at once, when asked to install (or
// download, or build a wheel) in a session without a network: the value
// of NoNetworkPipEnv, an option only those commands have, which pip
// refuses as a configuration error before it opens any connection
// ("An error occurred during configuration: option progress-bar: invalid
// choice: '<this>' (choose from ...)"). pip's other commands (list, show,
// freeze) do not read it. A session may set the variable itself, e.g.
// PIP_PROGRESS_BAR=off, to install a file it has with --no-index. It
// holds no single quote or backslash (pip shows it as a Python repr,
// which would escape them).
const NoNetworkPip = `glassroom: this session has no network, so pip cannot reach a package index. ` +
	`Ask for one when you create the session: "network": {"allow": ["pypi.org", "files.pythonhosted.org"]} ` +
	`(which the operator of the gateway must allow: --egress-allow). ` +
	`To install a file you already have: PIP_PROGRESS_BAR=off pip install --no-index FILE`

// NoNetworkPipEnv carries NoNetworkPip in a session without a network.
const NoNetworkPipEnv = "PIP_PROGRESS_BAR"

// KernelEnv returns the kernel's environment: the base every runtime uses,
// with the session's variables (already checked by Spec.Validate) added,
// and EgressSocketEnv when the session has a network (without one, pip is
// told to refuse at once: NoNetworkPip).
// Caches, history and Jupyter state live in the sandbox's private /tmp,
// never in the workspace; Jupyter config files are not read at all.
func KernelEnv(spec Spec, l Limits) map[string]string {
	env := map[string]string{
		"PATH":                           "/usr/local/bin:/usr/bin:/bin:" + UserBin,
		"HOME":                           WorkDir,
		"USER":                           "sandbox",
		"LOGNAME":                        "sandbox",
		"LANG":                           "C.UTF-8",
		"MPLBACKEND":                     "module://matplotlib_inline.backend_inline",
		"MPLCONFIGDIR":                   "/tmp/matplotlib",
		"IPYTHONDIR":                     "/tmp/ipython",
		"XDG_CACHE_HOME":                 "/tmp/cache",
		"XDG_CONFIG_HOME":                "/tmp/config",
		"XDG_DATA_HOME":                  "/tmp/data",
		"JUPYTER_NO_CONFIG":              "1",
		"JUPYTER_DATA_DIR":               "/tmp/jupyter",
		"JUPYTER_RUNTIME_DIR":            "/tmp/jupyter/runtime",
		"PYDEVD_DISABLE_FILE_VALIDATION": "1",
		"OPENBLAS_NUM_THREADS":           strconv.Itoa(max(1, int(l.CPUs))),
		// pip installs into the user site directory in the workspace (its
		// default: the system's site-packages is read-only); Debian marks
		// its Python externally managed (PEP 668), which would refuse
		// that too.
		"PIP_BREAK_SYSTEM_PACKAGES":     "1",
		"PIP_DISABLE_PIP_VERSION_CHECK": "1",
	}
	if spec.EgressSocket == "" {
		env[NoNetworkPipEnv] = NoNetworkPip
	}
	for k, v := range spec.Env {
		env[k] = v
	}
	if spec.EgressSocket != "" {
		env[EgressSocketEnv] = EgressDir + "/" + filepath.Base(spec.EgressSocket)
	}
	return env
}
