// Package volumes keeps tenants' named volumes (POST /v1/volumes): each
// an ext4 image of its size, which is its quota, loop-mounted on the host
// under the gateway's state directory while the gateway runs, and bound
// into the workspaces of the sessions that mount it (the local and docker
// runtimes bind it at a path under /home/user). A volume outlives its
// sessions and its gateway; two sessions may mount it at once and see
// each other's writes as on one disk (no locking beyond what the programs
// take: flock works across them). Another tenant never reaches it: its
// directory is a hash of its tenant, and only the gateway walks it.
//
// A Store needs root (mount) and loop devices; Open says ErrUnsupported
// otherwise. Its methods are safe for concurrent use; it owns no
// goroutine.
package volumes
