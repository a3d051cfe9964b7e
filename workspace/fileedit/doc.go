// Package fileedit edits text files of a session's workspace the way
// agents' text-editor tools do: view (numbered lines, an optional line
// range), create, str_replace (old_str must match exactly once) and insert
// (after line N, 0 for the top). The files API's PATCH route and the MCP
// tool edit_file use it.
//
// It works only through workspace.FS, so the same code edits a workspace
// on the gateway's host (workspace.Root) and one in a pod
// (workspace/remote.Client), with the same path rules (workspace.Clean:
// relative paths, or absolute ones under /home/user or /workspace; no
// symlink is ever followed). Edits are bounded (Config.MaxFileBytes, the
// file read and the file written), refuse what is not UTF-8 text, and are
// atomic: the new content is written to a temporary file in the same
// directory and renamed into place (workspace.FS.Write), so a reader sees
// the old content or the new, never a mix, and a failed edit changes
// nothing. A replaced file keeps its permission bits.
//
// An Editor serialises its own edits of one path; the session's code may
// still write the file at any moment: an edit that sees the file change
// between reading it and replacing it fails with ErrChanged instead of
// silently discarding that write (a check, not a lock: a write in the
// last instant before the rename can still be lost).
//
// Errors are *Error values of the kinds below (errors.Is), or the
// workspace's *workspace.PathError; their Public text is safe to show to
// a client. Mapping them to HTTP is the gateway's business.
package fileedit
