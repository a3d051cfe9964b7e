// Package sessionstore keeps what a gateway needs to bring its sessions
// back after a restart or a crash: for each session its tenant, limits,
// timing, runtime and the sandbox's State (handle and kernel connection,
// key included) and the Jupyter sessions (/api/sessions) whose kernel it
// is. It is an embedded bbolt database under the state
// directory, one file of mode 0600.
//
// bbolt, rather than SQLite: it is pure Go (no cgo, so the gateway stays
// one static binary, and the image FROM scratch), keeps one ordered
// key/value file with ACID transactions and crash safety (copy-on-write
// B+tree, fsync on commit), is maintained by etcd, and is all this needs:
// records by id, read whole at start.
//
// The file is not trusted. bbolt trusts its file: a corrupt or forged one
// can make it panic (in goroutines of its own, where nothing can recover
// the panic), fault on its memory map, recurse without end or loop. So
// Open first checks an existing file in a separate process (CheckMain,
// reached through Config.CheckCommand): bbolt's own consistency check and
// a read of every record, bounded by Config.CheckTimeout. A file that
// fails it, crashes it or outlasts it is corrupt: it is moved aside to
// sessions.db.corrupt-<UTC time> (the newest Config.KeepCorrupt copies
// are kept), the error is logged, and the store starts empty. A file that
// cannot be checked for another reason (it is locked by another process,
// unreadable, the check program does not run) is an error of Open, and
// the file is left as it is. Every transaction also turns a panic or a
// memory fault into an error (ErrCorrupt).
//
// Records are not trusted either. Each is decoded on its own, bounded
// (Config.MaxRecordBytes) and checked (its version, its id): one that is
// not readable is skipped with a *RecordError, and Open moves it to the
// lost list. The lost list (sessions that could not be brought back, and
// why) is pruned by age and count (Config.LostMaxAge, LostMaxCount).
package sessionstore
