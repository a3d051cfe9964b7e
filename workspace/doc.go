// Package workspace gives the gateway safe access to a session's workspace
// directory, which hostile sandboxed code can change at any moment.
//
// Every path is validated (relative, no "..", no NUL, no backslash,
// bounded length) and then resolved with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) relative to a descriptor
// of the workspace root (crossing the gateway's volume mounts, the only
// mounts under it on the host): a symlink planted by the code, even
// one swapped in between a check and a use, makes the call fail instead of
// reaching outside the workspace. Writes go to a temporary file in the
// same directory and are renamed into place.
//
// Watcher reports what an execution changed, with inotify: its cost grows
// with the number of changes, not with the size of the workspace.
// DirWatch (Root.WatchDir) streams the changes under one directory to a
// client, on an inotify instance of its own read by one goroutine it
// owns, through a bounded buffer (overflow events when it drops some).
// Root.Rename (Renamer) moves an entry with renameat2(RENAME_NOREPLACE)
// between parents resolved the same way. Root.Usage adds up the workspace's
// file sizes walking by descriptor the way Remove does (each directory
// opened relative to its parent with O_NOFOLLOW, on the workspace's file
// system only), within bounds of entries, depth and time.
package workspace
