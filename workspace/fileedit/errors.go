package fileedit

import (
	"fmt"
	"strings"
)

// Kind is the class of an edit's failure; the sentinels below are its
// values, for errors.Is.
type Kind string

func (k Kind) Error() string { return "fileedit: " + string(k) }

// Errors of an edit, besides the workspace's own (*workspace.PathError:
// no such file, a directory, a symlink in the path, a bad path, a full
// workspace).
const (
	// ErrInvalid is a bad command or argument: an unknown command, a
	// missing or misplaced argument, a line out of range, NUL bytes.
	ErrInvalid Kind = "invalid edit"
	// ErrNoMatch: str_replace's old_str does not occur in the file.
	ErrNoMatch Kind = "old_str not found"
	// ErrManyMatches: str_replace's old_str occurs more than once.
	ErrManyMatches Kind = "old_str is not unique"
	// ErrTooLarge: the file, or what the edit would make of it, is larger
	// than Config.MaxFileBytes.
	ErrTooLarge Kind = "file too large to edit"
	// ErrNotText: the file is not UTF-8 text (it has NUL bytes or invalid
	// UTF-8).
	ErrNotText Kind = "not a UTF-8 text file"
	// ErrChanged: the file changed between the edit's reading it and
	// replacing it (the session's code wrote it); nothing was written.
	ErrChanged Kind = "the file changed during the edit"
)

// Error is an edit's failure. Its Public text names only the client's own
// path and what went wrong, so it can be shown to the client as it is.
type Error struct {
	Kind   Kind
	Path   string // as workspace.Clean made it
	Detail string // what exactly was wrong, and what to do
	// Matches is how many times old_str occurs (ErrNoMatch: 0,
	// ErrManyMatches: 2 or more).
	Matches int
	// Lines are the lines where the first matches start (ErrManyMatches;
	// at most MaxMatchLines of them).
	Lines []int
}

// MaxMatchLines bounds Error.Lines.
const MaxMatchLines = 20

// Public is the message for the client.
func (e *Error) Public() string {
	msg := string(e.Kind)
	if e.Path != "" {
		msg += ": " + e.Path
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *Error) Error() string { return "fileedit: " + e.Public() }

// Unwrap returns the kind, so errors.Is matches it.
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind Kind, path, format string, args ...any) *Error {
	return &Error{Kind: kind, Path: path, Detail: fmt.Sprintf(format, args...)}
}

// lineList writes 3, 7 and 12 as "3, 7 and 12".
func lineList(lines []int, more bool) string {
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = fmt.Sprint(l)
	}
	if more {
		return strings.Join(s, ", ") + " and more"
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// humanBytes writes n as 512 B, 3.2 KiB or 4.0 MiB.
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
