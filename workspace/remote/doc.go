// Package remote serves a workspace over HTTP and reaches it from another
// host: for a sandbox whose workspace is not on the gateway's machine (a
// Kubernetes pod), a small agent next to the kernel serves the directory
// with Server, and the gateway uses it through Client, which implements
// workspace.FS and workspace.Tracker.
//
// The guarantees are the workspace package's, because the server is
// workspace.Root and workspace.Watcher on the pod's own directory: every
// path is validated (workspace.Clean) on both sides and resolved with
// openat2 without following symlinks. The server adds what a remote
// caller needs: a bearer token compared in constant time (as SHA-256
// digests), a quota on what uploads may store (the workspace's size), and
// errors sent as a kind and a short detail, never as host paths.
//
// The client treats the server as hostile (the sandboxed code shares the
// pod's network and could answer in its place): every response is size
// bounded, every entry and change is re-validated, errors are rebuilt from
// a fixed list of kinds with the caller's own path, and nothing the server
// says can name a path outside the workspace.
package remote
