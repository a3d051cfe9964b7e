package sandbox

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/glassroom/glassroom/kernel/kernels"
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// Limits on a session's environment.
const (
	MaxEnvVars       = 128
	MaxEnvValueBytes = 32 << 10
)

// reservedEnv lists the names a session may not set, by prefix (upper
// case), with the reason given to the client: they steer the loader, the
// C library or the kernel's start, or glassroom sets them itself. Each
// kernel adds the names that steer it (kernels.Kernel.ReservedEnv): a
// session's variables reach every kernel it starts.
func reservedEnv() []kernels.ReservedEnv {
	out := []kernels.ReservedEnv{
		{Prefix: "LD_", Why: "it steers the dynamic loader"},
		{Prefix: "GCONV_PATH", Why: "it steers the C library"},
		{Prefix: "GLIBC_", Why: "it steers the C library"},
		{Prefix: "MALLOC_", Why: "it steers the C library"},
		{Prefix: "LOCPATH", Why: "it steers the C library"},
		{Prefix: "NLSPATH", Why: "it steers the C library"},
		{Prefix: "HOSTALIASES", Why: "it steers the C library"},
		{Prefix: "RES_OPTIONS", Why: "it steers the C library"},
		{Prefix: "LOCALDOMAIN", Why: "it steers the C library"},
		{Prefix: "XDG_", Why: "glassroom sets it (caches stay out of the workspace)"},
		{Prefix: "GLASSROOM", Why: "it is reserved"},
		{Prefix: "HTTP_PROXY", Why: "network access comes from the session's network policy"},
		{Prefix: "HTTPS_PROXY", Why: "network access comes from the session's network policy"},
		{Prefix: "ALL_PROXY", Why: "network access comes from the session's network policy"},
		{Prefix: "NO_PROXY", Why: "network access comes from the session's network policy"},
	}
	for _, k := range kernels.All() {
		out = append(out, k.ReservedEnv...)
	}
	return out
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
	reserved := reservedEnv()
	for k, v := range env {
		if !envName.MatchString(k) {
			return badSpec("environment name %q (letters, digits and _ only)", k)
		}
		up := strings.ToUpper(k)
		if why, ok := reservedExact[up]; ok {
			return badSpec("environment variable %s may not be set: %s", k, why)
		}
		for _, r := range reserved {
			if strings.HasPrefix(up, r.Prefix) {
				return badSpec("environment variable %s may not be set: %s", k, r.Why)
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

// ShimDir is first on a sandbox's PATH: where a runtime whose sandboxes
// see the host's /usr (local) puts what the kernel image has in
// /usr/local/bin and a host may lack (sudo), so that every runtime's
// commands find it. The image has no such directory.
const ShimDir = "/opt/glassroom/bin"

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

// MemoryEnv and CPUsEnv give a kernel its sandbox's memory (MiB) and CPU
// quota (cores): Limits.MemoryMB and Limits.CPUs.
const (
	MemoryEnv = "GLASSROOM_MEMORY_MB"
	CPUsEnv   = "GLASSROOM_CPUS"
)

// KernelEnv returns the kernel's environment: the base every runtime uses,
// with the session's variables (already checked by Spec.Validate) added,
// and EgressSocketEnv when the session has a network (without one, pip is
// told to refuse at once: NoNetworkPip).
// Caches, history and Jupyter state live in the sandbox's private /tmp,
// never in the workspace; Jupyter config files are not read at all.
func KernelEnv(spec Spec, l Limits) map[string]string {
	env := map[string]string{
		"PATH":                           ShimDir + ":/usr/local/bin:/usr/bin:/bin:" + UserBin,
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
	// The sandbox's size, for kernels that size themselves to it (the
	// JVM's heap and compiler threads: javakernel.py).
	if l.MemoryMB > 0 {
		env[MemoryEnv] = strconv.Itoa(l.MemoryMB)
	}
	if l.CPUs > 0 {
		env[CPUsEnv] = strconv.FormatFloat(l.CPUs, 'f', -1, 64)
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
