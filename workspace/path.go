package workspace

import (
	"fmt"
	"strings"
)

// Limits on paths.
const (
	MaxPathBytes    = 1024
	MaxSegmentBytes = 255
)

// Kind is the class of a workspace error; the sentinels below are its
// values, for errors.Is.
type Kind string

func (k Kind) Error() string { return "workspace: " + string(k) }

// Errors. Every error of a file call is a *PathError of one of these kinds.
const (
	ErrBadPath  Kind = "invalid path"
	ErrNotFound Kind = "no such file or directory"
	ErrIsDir    Kind = "is a directory"
	ErrNotDir   Kind = "not a directory"
	ErrSymlink  Kind = "path crosses a symlink"
	ErrFull     Kind = "no space left in the workspace"
	ErrExists   Kind = "a directory is in the way"
	ErrBusy     Kind = "the file is locked by the session's code"
	ErrClosed   Kind = "closed (the session ended)"
	ErrIO       Kind = "input/output error"
	// ErrPermission: the sandbox's user may not read the path (a file of
	// the sandbox's own file system, outside the workspace).
	ErrPermission Kind = "permission denied"
)

// PathError is a file call's failure. Its Public text names only the
// client's own (relative) path and what went wrong, never a host path or
// an OS error's wording, so it can be shown to the client as it is.
type PathError struct {
	Kind   Kind
	Path   string // relative to the workspace, as the client gave it
	Detail string // optional: what exactly was wrong
	Err    error  // the underlying cause, for logs (may hold host paths)
}

func pathErr(kind Kind, path, detail string) *PathError {
	return &PathError{Kind: kind, Path: path, Detail: detail}
}

// Public is the message for the client.
func (e *PathError) Public() string {
	msg := string(e.Kind)
	if e.Path != "" {
		msg += ": " + e.Path
	}
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

func (e *PathError) Error() string {
	if e.Err != nil {
		return "workspace: " + e.Public() + ": " + e.Err.Error()
	}
	return "workspace: " + e.Public()
}

// Unwrap returns the kind and the cause, so errors.Is matches both.
func (e *PathError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// Where the kernels see the workspace: SandboxRoot is the canonical path
// (their working directory and HOME), SandboxAlias the same directory
// under its older name.
const (
	SandboxRoot  = "/home/user"
	SandboxAlias = "/workspace"
)

// OutsideHint says, for an absolute path outside the workspace that code
// written for E2B often uses, what to use instead ("" for others): there
// is no /root (a glassroom sandbox has no root user), and /tmp is the
// sandbox's private scratch space, which only its code reaches.
func OutsideHint(p string) string {
	switch {
	case p == "/root" || strings.HasPrefix(p, "/root/"):
		return " (a glassroom sandbox has no root user and no /root: its home and workspace is " + SandboxRoot + ", also " + SandboxAlias + ")"
	case p == "/tmp" || strings.HasPrefix(p, "/tmp/"):
		return " (/tmp is the sandbox's private scratch space, which only code in it reaches: keep files to share in " + SandboxRoot + ")"
	}
	return ""
}

// RelativeToRoot turns an absolute path as the kernels see it (under
// SandboxRoot or SandboxAlias) into one relative to the workspace; ok is
// false for a path outside it.
func RelativeToRoot(p string) (string, bool) {
	for _, root := range []string{SandboxRoot, SandboxAlias} {
		if p == root || p == root+"/" {
			return "", true
		}
		if rest, ok := strings.CutPrefix(p, root+"/"); ok {
			return rest, true
		}
	}
	return "", false
}

// Clean validates a client-supplied path and returns it in
// canonical form ("a/b/c"), relative to the workspace; an absolute path
// is accepted under SandboxRoot or SandboxAlias (the workspace as the
// kernels see it), nowhere else. The empty path, "" or ".", names the root.
// Paths arrive already percent-decoded; a path that still contains "%2e"
// style sequences is taken literally, so "%2e%2e" is a (valid) file name,
// never "..".
func Clean(p string) (string, error) {
	if len(p) > MaxPathBytes {
		return "", pathErr(ErrBadPath, "", fmt.Sprintf("longer than %d bytes", MaxPathBytes))
	}
	if strings.ContainsRune(p, 0) {
		return "", pathErr(ErrBadPath, "", "NUL byte")
	}
	if strings.ContainsRune(p, '\\') {
		return "", pathErr(ErrBadPath, "", "backslash")
	}
	if strings.HasPrefix(p, "/") {
		rel, ok := RelativeToRoot(p)
		if !ok {
			return "", pathErr(ErrBadPath, "", "absolute path outside "+SandboxRoot+OutsideHint(p))
		}
		p = rel
	}
	p = strings.TrimSuffix(p, "/")
	if p == "" || p == "." {
		return "", nil
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		switch {
		case s == "..":
			return "", pathErr(ErrBadPath, "", "'..' segment")
		case s == "" || s == ".":
			return "", pathErr(ErrBadPath, "", "empty or '.' segment")
		case len(s) > MaxSegmentBytes:
			return "", pathErr(ErrBadPath, "", fmt.Sprintf("a segment is longer than %d bytes", MaxSegmentBytes))
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				return "", pathErr(ErrBadPath, "", "control character")
			}
		}
	}
	return p, nil
}
