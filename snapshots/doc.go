// Package snapshots keeps tenants' session snapshots (POST
// /v1/sessions/{id}/snapshots): for each, an archive of the session's
// workspace as a tar file, which holds the state files its kernels wrote,
// and a manifest the gateway writes (what was captured, what was not).
//
// The archive was written by code in a sandbox: it is hostile data. The
// store never reads it; only a new session's sandbox does (tar, and its
// kernels). Each archive is bounded (Config.MaxBytes), and so is all of a
// tenant's (Config.TenantBytes, Config.MaxPerTenant). Another tenant's
// snapshot is ErrNotFound: a tenant's directory is a hash of its name.
//
// The store is a directory of the state directory on one machine; replicas
// of a cluster share it when it is on a volume they all mount. Its methods
// are safe for concurrent use; it owns no goroutine.
package snapshots
