package kernels

import (
	"os"
	"path/filepath"
	"strings"
)

// Default is the canonical name of the kernel of a session that names
// none.
const Default = "python3"

// All returns every kernel glassroom knows how to launch, Default first.
// Adding a kernel adds its constructor here. The values are fresh: the
// caller may keep and change them.
func All() []Kernel {
	return []Kernel{python(), r(), javascript(), typescript(), bash(), java()}
}

// Lookup finds a kernel by its name or one of its aliases, ignoring case
// and surrounding space.
func Lookup(name string) (Kernel, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, k := range All() {
		if k.Name == n {
			return k, true
		}
		for _, a := range k.Aliases {
			if a == n {
				return k, true
			}
		}
	}
	return Kernel{}, false
}

// Kernel is everything glassroom knows about one kind of kernel.
type Kernel struct {
	// Name is the canonical name: what requests, Jupyter clients and the
	// image's label use.
	Name string
	// Aliases are other names clients use for it (E2B's "js", "ts").
	Aliases []string
	// DisplayName is the name shown to people ("JavaScript (Deno)").
	DisplayName string
	// Label is the notebook prompt's short label ("Python", "JS").
	Label string
	// Language is the kernel's language_info, as its kernel_info_reply
	// gives it (without the version, which only the kernel knows): what a
	// saved notebook records and GET /v1/kernels serves.
	Language LanguageInfo
	// EditorMode is the web editor's syntax mode ("" for plain text).
	EditorMode string
	// SDKLanguage is the language's name in the SDKs' language unions
	// (sdk/python, sdk/js).
	SDKLanguage string
	// Launch is how the launcher starts it.
	Launch Launch
	// Probe says whether a host or a root file system has it installed.
	Probe Probe
	// HostConfig are the files and directories outside /usr (under /etc)
	// the kernel reads, which a sandbox that shows the host's /usr (the
	// local runtime) also shows, read-only, when they exist.
	HostConfig []string
	// NeedsAddressSpace: the runtime reserves far more virtual memory than
	// it uses (V8's cages), so no RLIMIT_AS lets it start: its memory is
	// bounded by the sandbox's cgroup only.
	NeedsAddressSpace bool
	// ReservedEnv are the environment names a session may not set
	// because they steer this kernel's start (upper-case prefixes).
	ReservedEnv []ReservedEnv
	// Settings applies one execution's envs and cwd; nil: the kernel
	// takes none.
	Settings *Settings
	// Snapshot is how its variables are captured and restored (sessions'
	// snapshots); nil: they are not (a snapshot holds the workspace and
	// says so).
	Snapshot *Snapshot
	// JupyterArgv is the argv of its Jupyter kernelspec, as Jupyter
	// clients show it ({connection_file} is the placeholder): glassroom
	// launches its kernels itself.
	JupyterArgv []string
	// Debugger: it speaks the Jupyter debugger's protocol.
	Debugger bool
	// Smoke is a command the image build runs in the finished image to
	// check the interpreter loads (it must exit 0).
	Smoke []string
	// Hello is code that prints "42" and a newline on stdout and nothing
	// else: the end-to-end tests' first cell in each language.
	Hello string
}

// LanguageInfo is the language_info of a kernel_info_reply (and of a
// notebook's metadata), less the version.
type LanguageInfo struct {
	Name          string `json:"name"`
	Mimetype      string `json:"mimetype"`
	FileExtension string `json:"file_extension"`
	// CodeMirrorMode is a mode's name or {"name": ..., "version": ...}.
	CodeMirrorMode    any    `json:"codemirror_mode,omitempty"`
	PygmentsLexer     string `json:"pygments_lexer,omitempty"`
	NbconvertExporter string `json:"nbconvert_exporter,omitempty"`
}

// LaunchKind says what the launcher runs.
type LaunchKind int

const (
	// IPyKernel is ipykernel in the launcher's own interpreter (python3).
	IPyKernel LaunchKind = iota
	// Program is a kernel of ours in Python (Launch.Program), which the
	// launcher runs in its own interpreter once the egress forwarder is
	// up.
	Program
	// Bridged is a kernel of its own (another interpreter), which the
	// launcher starts as its child and bridges to the gateway's sockets
	// as Launch.Bridge describes.
	Bridged
)

// Launch is how the launcher starts a kernel.
type Launch struct {
	Kind LaunchKind
	// Program is the Python source of a Program kernel. It travels on the
	// launcher's command line (comment lines dropped), so it may hold no
	// multi-line string.
	Program string
	// Bridge describes a Bridged kernel.
	Bridge *BridgeProfile
}

// BridgeProfile is what the launcher's bridge needs to know of a kernel
// it starts: given to it as JSON on its command line, so the bridge has no
// branch on a kernel's name.
type BridgeProfile struct {
	// Argv starts the kernel. "{conn}" in an argument is replaced by the
	// path of the kernel's own connection file, "{conn_json}" by that
	// path as a JSON string literal.
	Argv []string `json:"argv"`
	// Transport is how the kernel is reached. "ipc": it binds the
	// gateway's shell, iopub and stdin unix sockets itself and its
	// control and heartbeat beside them (IRkernel); "tcp": it listens on
	// loopback ports the bridge reserves, and the bridge relays every
	// channel (Deno).
	Transport string `json:"transport"`
	// KernelName is the kernel_name of its connection file ("" none).
	KernelName string `json:"kernel_name,omitempty"`
	// Heartbeat is who answers the gateway's heartbeat: "kernel", or
	// "bridge" for a kernel that answers only between cells (IRkernel).
	Heartbeat string `json:"heartbeat"`
	// Interrupt is how an interrupt reaches it: "message" (an
	// interrupt_request on its control channel) or "signal" (SIGINT to
	// its process; the bridge answers the request).
	Interrupt string `json:"interrupt"`
	// ChdirCode, if set, is run (silently) before the gateway may
	// connect, with "%s" replaced by the working directory as a JSON
	// string literal: the kernel starts in "/" (so nothing in the working
	// directory steers its start) and enters it then. Empty: the kernel
	// starts in the working directory.
	ChdirCode string `json:"chdir_code,omitempty"`
	// SyncCode, if set, is queued behind every execute_request: code
	// that broadcasts a comm message of the target "%s" (the bridge's
	// marker), after which the kernel has published all of the
	// execution's output (Deno sends its idle status before the output
	// of console.log has gone).
	SyncCode string `json:"sync_code,omitempty"`
	// DropEnv are the environment prefixes (upper case) the kernel's
	// environment loses.
	DropEnv []string `json:"drop_env"`
	// Env is added to the kernel's environment.
	Env map[string]string `json:"env,omitempty"`
	// PrivateEnv names variables set to a directory of that name in the
	// kernel's private directory (made fresh at each start).
	PrivateEnv map[string]string `json:"private_env,omitempty"`
	// UnlimitedAddressSpace: the bridge lifts a soft RLIMIT_AS and
	// refuses a hard one with a reason (see Kernel.NeedsAddressSpace).
	UnlimitedAddressSpace bool `json:"unlimited_address_space,omitempty"`
}

// Probe says where a kernel's files are.
type Probe struct {
	// Files must all exist. A path may be a glob (filepath.Match), which
	// must match at least one file.
	Files []string
	// Executables must all be regular files with an execute bit.
	Executables []string
	// AnyOf: at least one must exist (empty: no condition).
	AnyOf []string
}

// Found reports whether the file system under root ("/" for the host)
// has the kernel: it looks at files only. The paths are joined to root,
// so an image's relative links resolve inside it.
func (p Probe) Found(root string) bool {
	exists := func(pat string, exec bool) bool {
		matches, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			return false
		}
		for _, m := range matches {
			st, err := os.Stat(m)
			if err == nil && st.Mode().IsRegular() && (!exec || st.Mode().Perm()&0o111 != 0) {
				return true
			}
		}
		return false
	}
	for _, f := range p.Files {
		if !exists(f, false) {
			return false
		}
	}
	for _, f := range p.Executables {
		if !exists(f, true) {
			return false
		}
	}
	if len(p.AnyOf) == 0 {
		return true
	}
	for _, f := range p.AnyOf {
		if exists(f, false) {
			return true
		}
	}
	return false
}

// ReservedEnv is an environment prefix (upper case) a session may not
// set, with the reason given to the client.
type ReservedEnv struct {
	Prefix, Why string
}

// Settings is how one kernel applies and restores an execution's envs
// and working directory (sessions' per-execution settings): silent
// executions of its language before and after the execution's code.
type Settings struct {
	// Apply returns code that saves the current values of the names in
	// envs (sorted pairs) and the working directory (when cwd is not ""),
	// then fails with a message when cwd is not a directory, else enters
	// it and sets the variables.
	Apply func(envs [][2]string, cwd string) string
	// Restore is code that puts back what Apply saved, then forgets it;
	// it does nothing when nothing is saved, and may run again.
	Restore string
	// Restored reports whether the restore's reply (status, ename) means
	// it ran to its end; nil: status "ok".
	Restored func(status, ename string) bool
	// Refuse says why the language cannot take variable name ("": it
	// can), beyond the session's environment policy; nil: none.
	Refuse func(name string) string
	// Loud: the snippets run as non-silent executions (still without
	// history and with their output dropped), for a kernel that swallows
	// a silent execution's errors (IRkernel).
	Loud bool
	// Explain, if set, says what a failed apply's error value means, for
	// a kernel whose silent executions show no message (the bash kernel:
	// only the exit status).
	Explain func(evalue, cwd string) string
	// PropertiesOnly: the envs are the language's own settings (a JVM's
	// system properties), not the process's environment: processes the
	// code starts do not see them.
	PropertiesOnly bool
	// FixedCwd: the kernel cannot change its working directory (a JVM):
	// an execution's cwd is refused with a reason.
	FixedCwd bool
}
