package workspace

import (
	"errors"
	"fmt"
	"strings"
)

// Limits on paths.
const (
	MaxPathBytes    = 1024
	MaxSegmentBytes = 255
)

// Errors. ErrBadPath is wrapped by every path validation failure.
var (
	ErrBadPath  = errors.New("workspace: invalid path")
	ErrNotFound = errors.New("workspace: no such file or directory")
	ErrIsDir    = errors.New("workspace: is a directory")
	ErrNotDir   = errors.New("workspace: not a directory")
	ErrSymlink  = errors.New("workspace: path crosses a symlink")
	ErrFull     = errors.New("workspace: no space left in the workspace")
	ErrExists   = errors.New("workspace: a directory is in the way")
	ErrBusy     = errors.New("workspace: the file is locked by the session's code")
	ErrClosed   = errors.New("workspace: closed (the session ended)")
)

// Clean validates a client-supplied relative path and returns it in
// canonical form ("a/b/c"). The empty path, "" or ".", names the root.
// Paths arrive already percent-decoded; a path that still contains "%2e"
// style sequences is taken literally, so "%2e%2e" is a (valid) file name,
// never "..".
func Clean(p string) (string, error) {
	if len(p) > MaxPathBytes {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrBadPath, MaxPathBytes)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: NUL byte", ErrBadPath)
	}
	if strings.ContainsRune(p, '\\') {
		return "", fmt.Errorf("%w: backslash", ErrBadPath)
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%w: absolute path", ErrBadPath)
	}
	p = strings.TrimSuffix(p, "/")
	if p == "" || p == "." {
		return "", nil
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		switch {
		case s == "..":
			return "", fmt.Errorf("%w: '..' segment", ErrBadPath)
		case s == "" || s == ".":
			return "", fmt.Errorf("%w: empty or '.' segment", ErrBadPath)
		case len(s) > MaxSegmentBytes:
			return "", fmt.Errorf("%w: a segment is longer than %d bytes", ErrBadPath, MaxSegmentBytes)
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				return "", fmt.Errorf("%w: control character", ErrBadPath)
			}
		}
	}
	return p, nil
}
