package workspace

import (
	"io"
	"io/fs"
)

// FS is a session's workspace as the files API and the session use it.
// *Root implements it for a workspace on the gateway's own host; a runtime
// whose workspace lives elsewhere (a pod) provides its own implementation,
// with the same path rules (Clean) and guarantees: no call ever reads or
// writes outside the workspace, whatever the code planted in it. Methods
// are safe for concurrent use; Close releases it.
type FS interface {
	// List returns the entries of directory dir, sorted by name (truncated
	// reports more than MaxListEntries).
	List(dir string) (entries []Entry, truncated bool, err error)
	// Stat describes p without following a final symlink.
	Stat(p string) (Entry, error)
	// OpenFile opens the regular file at p for reading; the caller closes it.
	OpenFile(p string) (io.ReadSeekCloser, fs.FileInfo, error)
	// Write stores src at p, creating parents; a failed write leaves the
	// previous content.
	Write(p string, src io.Reader) (int64, error)
	// MakeDir creates directory p and its parents.
	MakeDir(p string) error
	// Remove deletes the file, symlink or directory tree at p.
	Remove(p string) error
	Close() error
}

// Tracker reports what an execution changed in the workspace. The session's
// worker calls Reset before an execution and Changes after it; it is not
// safe for concurrent use. *Watcher implements it.
type Tracker interface {
	Reset()
	Changes() (changes []Change, truncated bool)
	Close() error
}

var (
	_ FS      = (*Root)(nil)
	_ Tracker = (*Watcher)(nil)
)
