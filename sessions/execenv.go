package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Per-execution settings: ExecRequest.Envs and Cwd apply to one execution
// only. In the execution's turn, before its code, the worker runs a silent
// execution (silent, no history, its output not the caller's) of the
// kernel's language that saves what it is about to change (inside the
// kernel, out of the user's namespace) and applies the settings; after the
// code, whatever its outcome (ok, error, interrupted, timed out but
// obeyed), another that puts back what was saved: variables that existed
// get their old value, new ones are removed, the working directory is the
// previous one. A kernel that is restarted instead (it ignored the
// timeout's interrupt, a restart was asked for, it died) comes back with
// the session's own environment and directory, so nothing is put back.
//
// The code of every language is in settingsCode, one table; values reach
// it as JSON string literals (valid in Python, JavaScript and R) or, in
// bash, single-quoted.

// settingsLang is how one language applies and restores an execution's
// settings.
type settingsLang struct {
	// apply returns code that saves the current values of the names in
	// envs (sorted) and the working directory (when cwd is not ""), then
	// fails with a message when cwd is not a directory, else enters it and
	// sets the variables.
	apply func(envs [][2]string, cwd string) string
	// restore is code that puts back what apply saved, then forgets it; it
	// does nothing when nothing is saved, and may run again.
	restore string
	// restored reports whether the restore's reply (status, ename) means
	// it ran to its end.
	restored func(status, ename string) bool
	// refuse says why the language cannot take variable name ("": it
	// can), beyond sandbox.CheckEnv's policy.
	refuse func(name string) string
	// loud: the snippets run as non-silent executions (still without
	// history and with their output dropped), for a kernel that swallows
	// a silent execution's errors (IRkernel).
	loud bool
	// explain, if set, says what a failed apply's reply (its error value)
	// means, for a kernel whose silent executions show no message (the
	// bash kernel: only the exit status).
	explain func(evalue, cwd string) string
}

func replyOK(status, _ string) bool { return status == "ok" }

// settingsCode returns the table entry of kernel (a sandbox.KernelSpec
// name).
func settingsCode(kernel string) (settingsLang, bool) {
	switch kernel {
	case "python3":
		return settingsLang{apply: pythonApply, restore: pythonRestore, restored: replyOK}, true
	case "r":
		return settingsLang{apply: rApply, restore: rRestore, restored: replyOK, loud: true}, true
	case "javascript", "typescript":
		return settingsLang{apply: denoApply, restore: denoRestore, restored: replyOK}, true
	case "bash":
		return settingsLang{apply: bashApply, restore: bashRestore, restored: bashRestored, refuse: bashRefuse, explain: bashExplain}, true
	}
	return settingsLang{}, false
}

// jsonLit is s as a JSON string literal: also a valid string literal of
// Python, JavaScript and R (json.Marshal escapes the controls, quotes,
// backslashes, U+2028/9 and <, >, &; NUL bytes are refused before).
func jsonLit(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pairsLit returns envs as `[["k", "v"], ...]` of JSON string literals:
// a list of pairs in Python and JavaScript alike.
func pairsLit(envs [][2]string) string {
	var b strings.Builder
	b.WriteString("[")
	for i, kv := range envs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("[" + jsonLit(kv[0]) + ", " + jsonLit(kv[1]) + "]")
	}
	b.WriteString("]")
	return b.String()
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

var pythonRestore = pythonExec(pythonRestoreBody)

// R: the saved state is an option (options() is global and not in the
// user's environment).
const rApplyCode = `base::local({
  p <- base::list(%s)
  d <- %s
  s <- base::list(env = base::lapply(p, function(x) base::c(x[1], base::Sys.getenv(x[1], unset = NA))), cwd = NULL)
  if (!base::is.null(d)) s$cwd <- base::getwd()
  base::options(glassroom.exec.settings = s)
  if (!base::is.null(d)) {
    if (!base::dir.exists(d)) base::stop(base::sprintf("cwd %%s: no such directory in the sandbox", d), call. = FALSE)
    base::setwd(d)
  }
  for (x in p) base::do.call(base::Sys.setenv, base::structure(base::list(x[2]), names = x[1]))
  base::invisible(NULL)
})`

const rRestore = `base::local({
  s <- base::getOption("glassroom.exec.settings")
  if (!base::is.null(s)) {
    for (x in s$env) {
      if (base::is.na(x[2])) base::Sys.unsetenv(x[1]) else base::do.call(base::Sys.setenv, base::structure(base::list(x[2]), names = x[1]))
    }
    if (!base::is.null(s$cwd)) base::try(base::setwd(s$cwd), silent = TRUE)
    base::options(glassroom.exec.settings = NULL)
  }
  base::invisible(NULL)
})`

func rApply(envs [][2]string, cwd string) string {
	d := "NULL"
	if cwd != "" {
		d = jsonLit(cwd)
	}
	var b strings.Builder
	for i, kv := range envs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("base::c(" + jsonLit(kv[0]) + ", " + jsonLit(kv[1]) + ")")
	}
	return fmt.Sprintf(rApplyCode, b.String(), d)
}

// Deno (JavaScript and TypeScript): the saved state is a property of
// globalThis under a registered symbol. Plain JavaScript, valid as
// TypeScript (Deno's kernel does not type-check).
const denoApplyCode = `((p, d) => {
  const s = { env: p.map(([k]) => [k, Deno.env.get(k)]), cwd: null };
  if (d !== null) { try { s.cwd = Deno.cwd(); } catch (_) { /* gone */ } }
  globalThis[Symbol.for("glassroom.exec.settings")] = s;
  if (d !== null) {
    let dir = false;
    try { dir = Deno.statSync(d).isDirectory; } catch (_) { /* missing */ }
    if (!dir) throw new Error("cwd " + d + ": no such directory in the sandbox");
    Deno.chdir(d);
  }
  for (const [k, v] of p) Deno.env.set(k, v);
})(%s, %s);`

const denoRestore = `(() => {
  const key = Symbol.for("glassroom.exec.settings");
  const s = globalThis[key];
  if (s) {
    for (const [k, v] of s.env) { if (v === undefined) Deno.env.delete(k); else Deno.env.set(k, v); }
    if (s.cwd !== null) { try { Deno.chdir(s.cwd); } catch (_) { /* gone */ } }
    delete globalThis[key];
  }
})();`

func denoApply(envs [][2]string, cwd string) string {
	d := "null"
	if cwd != "" {
		d = jsonLit(cwd)
	}
	return fmt.Sprintf(denoApplyCode, pairsLit(envs), d)
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

// sq is s single-quoted for bash: safe for any bytes but NUL.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// hasSettings reports whether r asks for per-execution settings.
func (r *ExecRequest) hasSettings() bool { return len(r.Envs) > 0 || r.Cwd != "" }

// validateSettings checks r's Envs and Cwd for a kernel of kernel: the
// session env policy (sandbox.CheckEnv), the language's own refusals, and
// the workspace path rules (sandbox.SandboxPath); Cwd is made canonical.
func (r *ExecRequest) validateSettings(kernel string) error {
	if !r.hasSettings() {
		r.Cwd = ""
		return nil
	}
	lang, ok := settingsCode(kernel)
	if !ok {
		return invalid("envs and cwd of an execution are not supported by the %s kernel", kernel)
	}
	if err := sandbox.CheckEnv(r.Envs); err != nil {
		return settingsInvalid("envs", err)
	}
	if lang.refuse != nil {
		for _, k := range sortedNames(r.Envs) {
			if why := lang.refuse(k); why != "" {
				return invalid("envs: environment variable %s may not be set in %s: %s", k, kernel, why)
			}
		}
	}
	if r.Cwd != "" {
		cwd, err := sandbox.SandboxPath(r.Cwd)
		if err != nil {
			return settingsInvalid("cwd", err)
		}
		r.Cwd = cwd
	}
	return nil
}

func settingsInvalid(field string, err error) error {
	var se *sandbox.SpecError
	if errors.As(err, &se) {
		return &InvalidError{Reason: field + ": " + se.Public(), Err: err}
	}
	return &InvalidError{Reason: field + ": " + err.Error(), Err: err}
}

func sortedNames(env map[string]string) []string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// settingsPairs returns r's Envs as sorted name-value pairs.
func (r *ExecRequest) settingsPairs() [][2]string {
	out := make([][2]string, 0, len(r.Envs))
	for _, k := range sortedNames(r.Envs) {
		out = append(out, [2]string{k, r.Envs[k]})
	}
	return out
}
