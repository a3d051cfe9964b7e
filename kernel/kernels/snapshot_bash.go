package kernels

// bashSnapshot captures the shell's variables (declare -p, as global
// declarations), its functions (declare -f) and its working directory,
// as a script that the restore sources. Bash's own variables, the
// kernel's (__glassroom_* and display), the session's (GLASSROOM_*, E2B_*,
// and exported ones still as the shell started with them), the readonly
// ones and the environment every shell gets (HOME, PATH, ...) are left
// out of the names it reports. The declarations have no "builtin" before
// them: only a bare declare parses an array's (...) as its value.
func bashSnapshot() *Snapshot {
	return &Snapshot{
		Capture: func(dir, name string) string {
			state, report := snapshotPaths(dir, name)
			return "__glassroom_sd=" + sq(dir) + "; __glassroom_ss=" + sq(state) + "; __glassroom_sr=" + sq(report) + "\n" + bashCaptureBody
		},
		Restore: func(dir, name string) string {
			state, report := snapshotPaths(dir, name)
			return "__glassroom_ss=" + sq(state) + "; __glassroom_sr=" + sq(report) + "\n" + bashRestoreStateBody
		},
		What: "variables, functions and the working directory",
	}
}

const bashCaptureBody = `builtin command mkdir -p -- "$__glassroom_sd" || builtin return 1
__glassroom_sn=()
{
  for __glassroom_sv in $(builtin compgen -v); do
    case $__glassroom_sv in
      __glassroom_*|GLASSROOM_*|E2B_*|BASH*|COMP_*|COMPREPLY|DIRSTACK|EPOCH*|EUID|FUNCNAME|GROUPS|HISTCMD|HIST*|HOME|HOSTNAME|HOSTTYPE|IFS|LANG|LC_*|LINENO|LINES|COLUMNS|LOGNAME|MACHTYPE|MAIL*|OLDPWD|OPTARG|OPTERR|OPTIND|OSTYPE|PATH|PIPESTATUS|PPID|PS[0-9]|PWD|RANDOM|SECONDS|SHELL|SHELLOPTS|SHLVL|SRANDOM|TERM|TMPDIR|UID|USER|_|PROMPT_COMMAND) builtin continue ;;
    esac
    __glassroom_sl=$(builtin declare -p "$__glassroom_sv" 2>/dev/null) || builtin continue
    __glassroom_sf=${__glassroom_sl#declare }; __glassroom_sf=${__glassroom_sf%% *}
    [[ $__glassroom_sf == *r* ]] && builtin continue
    # An exported variable as the shell got it at its start is the
    # session's environment, not the code's.
    [[ $__glassroom_sf == *x* ]] && builtin command grep -qzxF -- "$__glassroom_sv=${!__glassroom_sv}" /proc/$$/environ 2>/dev/null && builtin continue
    builtin printf 'declare -g %s\n' "${__glassroom_sl#declare }"
    __glassroom_sn+=("$__glassroom_sv")
  done
  for __glassroom_sv in $(builtin compgen -A function); do
    [[ $__glassroom_sv == __glassroom_* || $__glassroom_sv == display ]] && builtin continue
    builtin declare -f -- "$__glassroom_sv"
    __glassroom_sn+=("$__glassroom_sv")
  done
  builtin printf 'builtin cd -- %q 2>/dev/null || builtin true\n' "$PWD"
} > "$__glassroom_ss"
{
  builtin printf '{"captured":['
  __glassroom_sc=''
  for __glassroom_sv in "${__glassroom_sn[@]}"; do
    [[ $__glassroom_sv =~ ^[A-Za-z_][A-Za-z0-9_.:-]*$ ]] || builtin continue
    builtin printf '%s"%s"' "$__glassroom_sc" "$__glassroom_sv"; __glassroom_sc=','
  done
  builtin printf '],"uncaptured":[]}\n'
} > "$__glassroom_sr"
builtin unset __glassroom_sd __glassroom_ss __glassroom_sr __glassroom_sn __glassroom_sv __glassroom_sl __glassroom_sc __glassroom_sf
`

const bashRestoreStateBody = `if builtin source "$__glassroom_ss" 2>/dev/null; then
  builtin printf '{"failed":[]}\n' > "$__glassroom_sr"
else
  builtin printf '{"restored":[],"failed":[],"error":"the shell state could not be restored (the script failed)"}\n' > "$__glassroom_sr"
fi
builtin command rm -f -- "$__glassroom_ss"
builtin unset __glassroom_ss __glassroom_sr
`
