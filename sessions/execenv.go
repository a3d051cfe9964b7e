package sessions

import (
	"errors"
	"sort"

	"github.com/glassroom/glassroom/kernel/kernels"
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
// The code of every language is its kernel's kernels.Settings.

// settingsCode returns the settings code of kernel (a canonical name),
// false for a kernel that takes none.
func settingsCode(kernel string) (kernels.Settings, bool) {
	k, ok := kernels.Lookup(kernel)
	if !ok || k.Name != kernel || k.Settings == nil {
		return kernels.Settings{}, false
	}
	s := *k.Settings
	if s.Restored == nil {
		s.Restored = func(status, _ string) bool { return status == "ok" }
	}
	return s, true
}

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
	if lang.Refuse != nil {
		for _, k := range sortedNames(r.Envs) {
			if why := lang.Refuse(k); why != "" {
				return invalid("envs: environment variable %s may not be set in %s: %s", k, kernel, why)
			}
		}
	}
	if r.Cwd != "" && lang.FixedCwd {
		return invalid("cwd: the %s kernel keeps the working directory it started in (a JVM cannot change it): "+
			"create a context of it with that cwd instead (POST /v1/sessions/{id}/contexts)", kernel)
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
