package kernels

import (
	_ "embed"
	"fmt"
	"strings"
)

// programKernel is what the program kernels share (display bundles, a
// process group's CPU time): each Program begins with it.
//
//go:embed programkernel.py
var programKernel string

// bashKernel is the bash kernel: a Python program on ipykernel's Kernel
// base that drives one persistent bash, which reads no start-up file.
//
//go:embed bashkernel.py
var bashKernel string

// bash is glassroom's own bash kernel (bashkernel.py), which the launcher
// runs once the egress forwarder is up.
func bash() Kernel {
	return Kernel{
		Name:        "bash",
		Aliases:     []string{"bash", "sh", "shell"},
		DisplayName: "Bash",
		Label:       "Bash",
		Language:    LanguageInfo{Name: "bash", Mimetype: "text/x-sh", FileExtension: ".sh", CodeMirrorMode: "shell", PygmentsLexer: "bash"},
		EditorMode:  "shell",
		SDKLanguage: "bash",
		Launch:      Launch{Kind: Program, Program: programKernel + "\n" + bashKernel},
		Probe:       Probe{Files: []string{"/bin/bash", "/usr/bin/python3", "/usr/lib/python3/dist-packages/ipykernel/__init__.py"}},
		ReservedEnv: []ReservedEnv{
			{"BASH_ENV", "it steers shells started by the code"},
			{"BASH_FUNC_", "it steers shells started by the code"},
			{"ENV", "it steers shells started by the code"},
		},
		Settings: &Settings{Apply: bashApply, Restore: bashRestore, Restored: bashRestored, Refuse: bashRefuse, Explain: bashExplain},
		Snapshot: bashSnapshot(),
		// glassroom's own kernel (kernel/kernels/bashkernel.py).
		JupyterArgv: []string{"python3", "-I", "bashkernel.py", "-f", "{connection_file}"},
		Smoke:       []string{"bash", "-c", "exec python3 -I -c 'import ipykernel.kernelbase'"},
		Hello:       "echo $((6 * 7))",
	}
}

// Bash: the apply builds, in a shell variable, the script that puts back
// what it changes (values quoted by printf %q), which the restore evals.
// The cell's $? is 0 in a cell with settings (the apply ran before it);
// the restore passes the cell's own status on to the next cell, so its
// reply is an ExitStatus error when the cell's status was not 0.
func bashApply(envs [][2]string, cwd string) string {
	var b strings.Builder
	b.WriteString("__glassroom_xr=''\n")
	if cwd != "" {
		q := sq(cwd)
		b.WriteString("builtin printf -v __glassroom_xq %q \"$PWD\"\n")
		b.WriteString("__glassroom_xr+=\"builtin cd -- $__glassroom_xq 2>/dev/null;\"\n")
		b.WriteString("[[ -d " + q + " ]] || builtin return 3\n")
		b.WriteString("builtin cd -- " + q + " 2>/dev/null || builtin return 4\n")
	}
	for _, kv := range envs {
		n := kv[0] // a name: letters, digits and _ only (sandbox.CheckEnv)
		fmt.Fprintf(&b, "if [[ -v %[1]s ]]; then builtin printf -v __glassroom_xq %%q \"$%[1]s\"; "+
			"if [[ ${%[1]s@a} == *x* ]]; then __glassroom_xr+=\"builtin export %[1]s=$__glassroom_xq;\"; "+
			"else __glassroom_xr+=\"%[1]s=$__glassroom_xq; builtin export -n %[1]s;\"; fi; "+
			"else __glassroom_xr+=\"builtin unset %[1]s;\"; fi\n", n)
		fmt.Fprintf(&b, "builtin export %s=%s 2>/dev/null || builtin return 5\n", n, sq(kv[1]))
	}
	b.WriteString("builtin unset __glassroom_xq\n")
	return b.String()
}

const bashRestore = `__glassroom_xs=$?
if [[ -n ${__glassroom_xr+set} ]]; then builtin eval -- "$__glassroom_xr"; builtin unset __glassroom_xr; fi
builtin return "$__glassroom_xs"
`

// bashExplain reads the exit status of a failed bash apply.
func bashExplain(evalue, cwd string) string {
	switch evalue {
	case "exit status 3":
		return fmt.Sprintf("cwd %s: no such directory in the sandbox", cwd)
	case "exit status 4":
		return fmt.Sprintf("cwd %s: the shell cannot enter it", cwd)
	case "exit status 5":
		return "a variable could not be set (the code made it readonly?)"
	}
	return evalue
}

// bashRestored: the restore ends with the cell's own status; only an
// interrupt (or the kernel's own failure) stops it before its end.
func bashRestored(status, ename string) bool { return status == "ok" || ename == "ExitStatus" }

// bashSpecial are the names bash itself gives a meaning (besides those of
// BASH* and the kernel's own __glassroom*): setting one would change the
// shell, not a variable of the code.
var bashSpecial = map[string]bool{
	"_": true, "ENV": true, "SHELLOPTS": true, "POSIXLY_CORRECT": true, "PROMPT_COMMAND": true, "PS0": true, "PS1": true,
	"PS2": true, "PS3": true, "PS4": true, "TMOUT": true, "IGNOREEOF": true, "HISTFILE": true, "HISTFILESIZE": true,
	"HISTSIZE": true, "HISTCONTROL": true, "HISTIGNORE": true, "HISTTIMEFORMAT": true, "HISTCMD": true, "INPUTRC": true,
	"FUNCNEST": true, "MAIL": true, "MAILPATH": true, "MAILCHECK": true, "SHLVL": true, "IFS": true, "CDPATH": true,
	"GLOBIGNORE": true, "PWD": true, "OLDPWD": true, "OPTIND": true, "OPTARG": true, "OPTERR": true, "RANDOM": true,
	"SRANDOM": true, "SECONDS": true, "LINENO": true, "UID": true, "EUID": true, "PPID": true, "GROUPS": true,
	"FUNCNAME": true, "DIRSTACK": true, "PIPESTATUS": true, "EPOCHREALTIME": true, "EPOCHSECONDS": true,
	"TIMEFORMAT": true, "FIGNORE": true, "EXECIGNORE": true, "PROMPT_DIRTRIM": true, "CHILD_MAX": true,
	"HOSTFILE": true, "COLUMNS": true, "LINES": true, "histchars": true, "auto_resume": true,
}

func bashRefuse(name string) string {
	up := strings.ToUpper(name)
	switch {
	case bashSpecial[name] || bashSpecial[up]:
		return "bash gives it a meaning of its own"
	case strings.HasPrefix(up, "BASH"), strings.HasPrefix(up, "COMP_"), strings.HasPrefix(up, "READLINE_"):
		return "bash gives it a meaning of its own"
	case strings.HasPrefix(up, "__GLASSROOM"):
		return "the bash kernel uses it"
	}
	return ""
}
