package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/glassroom/glassroom/cleanup"
	"golang.org/x/sys/unix"
)

// Dirs is a session's directory on the host, <state dir>/<session id>:
//
//	work/  the workspace: a tmpfs of the session's size, owned by its uid
//	ipc/   the first kernel's sockets and connection file: a 1 MiB tmpfs
//	ctx/   one directory per context (ContextStarter), the ipc directory of
//	       that context's kernel: a small tmpfs owned by the gateway (mode
//	       0711: the sandbox cannot create, rename or replace its entries),
//	       each entry owned by the sandbox's uid
//
// They are bind-mounted into the sandbox. Being size-limited tmpfs, nothing
// the kernel writes there can reach the host's disks or grow past the
// session's quota. Without root nothing is mounted (plain directories).
//
// A context's ipc directory is not under ipc/: the first kernel's restart
// empties ipc/ (PrepareIPC), and every directory above one the gateway
// writes to or connects in must be out of the sandbox's reach (ipc/ is
// the sandbox's: it could replace a subdirectory with a symlink).
type Dirs struct {
	path     string
	uid, gid int
	ipc      string // the ipc directory of a context's view (Context), or "" for path/ipc
}

// Sizes of the ipc tmpfs: a connection file and five sockets.
const (
	ipcSize   = "1m"
	ipcInodes = 32
	// ctxSize and ctxInodes bound the contexts' ipc directories together:
	// a context takes 7 inodes (its directory, a connection file, five
	// sockets) and a page.
	ctxSize   = "2m"
	ctxInodes = 512
	// workInodes bounds the files of a workspace (each costs kernel memory).
	workInodes = 64 * 1024
)

// prepareStateDir creates the state directory (mode 0711: sandbox uids may
// traverse it, not list it).
func prepareStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("sandbox: state dir: %w", err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return fmt.Errorf("sandbox: state dir: %w", err)
	}
	return nil
}

// CreateDirs creates and, when mount is set (root), mounts a session's
// directories, owned by uid:gid. On failure nothing is left behind.
func CreateDirs(stateDir, id string, uid, gid, workspaceMB int, mount bool) (d *Dirs, err error) {
	var undo cleanup.Stack
	defer undo.Unwind(&err)
	d = &Dirs{path: filepath.Join(stateDir, id), uid: uid, gid: gid}
	if err := os.Mkdir(d.path, 0o711); err != nil {
		return nil, fmt.Errorf("sandbox: session dir: %w", err)
	}
	undo.Push("remove session dir", d.Remove)
	for _, dir := range []string{d.Work(), d.IPC()} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: session dir: %w", err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, fmt.Errorf("sandbox: chown session dir: %w", err)
		}
	}
	if err := os.Mkdir(d.Contexts(), 0o711); err != nil { // the gateway's
		return nil, fmt.Errorf("sandbox: session dir: %w", err)
	}
	if !mount {
		return d, nil
	}
	mounts := []struct{ dir, opts string }{
		{d.Work(), fmt.Sprintf("size=%dm,nr_inodes=%d,mode=0700,uid=%d,gid=%d", workspaceMB, workInodes, uid, gid)},
		{d.IPC(), fmt.Sprintf("size=%s,nr_inodes=%d,mode=0700,uid=%d,gid=%d", ipcSize, ipcInodes, uid, gid)},
		{d.Contexts(), fmt.Sprintf("size=%s,nr_inodes=%d,mode=0711,uid=%d,gid=%d", ctxSize, ctxInodes, os.Geteuid(), os.Getegid())},
	}
	for _, m := range mounts {
		if err := unix.Mount("tmpfs", m.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, m.opts); err != nil {
			return nil, fmt.Errorf("sandbox: mount tmpfs on %s: %w", filepath.Base(m.dir), err)
		}
	}
	return d, nil
}

// OpenDirs returns the existing directories of a session (a previous
// gateway made them; their mounts outlived it), after checking that they
// are there.
func OpenDirs(stateDir, id string, uid, gid int) (*Dirs, error) {
	d := &Dirs{path: filepath.Join(stateDir, id), uid: uid, gid: gid}
	for _, dir := range []string{d.Work(), d.IPC()} {
		st, err := os.Lstat(dir)
		if err != nil || !st.IsDir() {
			return nil, fmt.Errorf("sandbox: session directory %s: %w", dir, errors.Join(err, os.ErrNotExist))
		}
	}
	return d, nil
}

// Path returns the session directory.
func (d *Dirs) Path() string { return d.path }

// Work returns the host path of the workspace.
func (d *Dirs) Work() string { return filepath.Join(d.path, "work") }

// IPC returns the host path of the ipc directory: the first kernel's, or,
// for a context's view (Context), that context's.
func (d *Dirs) IPC() string {
	if d.ipc != "" {
		return d.ipc
	}
	return filepath.Join(d.path, "ipc")
}

// Contexts returns the host path of the directory of the contexts' ipc
// directories.
func (d *Dirs) Contexts() string { return filepath.Join(d.path, "ctx") }

// Context creates (or, left by an earlier context of that name, reuses)
// the ipc directory of the context name (ContextPattern), owned by the
// sandbox's uid, and returns the session's directories as that context's
// kernel uses them: its IPC is that directory, the rest is the session's.
// It fails on a session directory made before contexts existed (no ctx/).
func (d *Dirs) Context(name string) (*Dirs, error) {
	if !ContextPattern.MatchString(name) {
		return nil, badSpec("context name %q", name)
	}
	dir := filepath.Join(d.Contexts(), name)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("sandbox: context directory: %w", err)
	}
	// ctx/ is the gateway's: nothing the sandbox did can have put a
	// symlink here; check anyway before giving it away.
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("sandbox: context directory %s: %w", dir, errors.Join(err, unix.ENOTDIR))
	}
	if err := os.Chown(dir, d.uid, d.gid); err != nil {
		return nil, fmt.Errorf("sandbox: chown context directory: %w", err)
	}
	v := *d
	v.ipc = dir
	return &v, nil
}

// RemoveContext deletes the ipc directory of the context name, if any.
func (d *Dirs) RemoveContext(name string) error {
	if !ContextPattern.MatchString(name) {
		return badSpec("context name %q", name)
	}
	if err := os.RemoveAll(filepath.Join(d.Contexts(), name)); err != nil {
		return fmt.Errorf("sandbox: remove context directory: %w", err)
	}
	return nil
}

// Remove unmounts and deletes the session directory.
func (d *Dirs) Remove() error { return RemoveDir(d.path) }

// BindVolumes binds each volume's host directory at its path in the
// workspace, on the host: the files API and every process of the sandbox
// (whose binds of the workspace are recursive) see it there. It must run
// on a fresh workspace (CreateDirs with mount), before anything runs in
// the sandbox: the paths are made as the sandbox's user, and nothing in
// the workspace can be a symlink yet. vols must have passed
// Spec.Validate.
func (d *Dirs) BindVolumes(vols []VolumeMount) error {
	for _, v := range vols {
		dst := filepath.Join(d.Work(), v.Path)
		rel := ""
		for _, part := range strings.Split(v.Path, "/") { // made one by one, each checked to be a plain directory
			rel = filepath.Join(rel, part)
			p := filepath.Join(d.Work(), rel)
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("sandbox: volume mount point: %w", err)
			}
			if st, err := os.Lstat(p); err != nil || !st.IsDir() {
				return fmt.Errorf("sandbox: volume mount point %s is not a directory", rel)
			}
			if err := os.Lchown(p, d.uid, d.gid); err != nil {
				return fmt.Errorf("sandbox: volume mount point: %w", err)
			}
		}
		if err := unix.Mount(v.HostDir, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("sandbox: bind volume at %s: %w", v.Path, err)
		}
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("sandbox: bind volume at %s: %w", v.Path, err)
		}
	}
	return nil
}

// RemoveDir unmounts the tmpfs of a session directory (a live one, or one a
// crashed gateway left) and deletes it. Whatever else is mounted under it
// (volumes) is unmounted first, never walked: a volume outlives its
// sessions.
func RemoveDir(path string) error {
	if err := unmountUnder(path); err != nil {
		return err
	}
	for _, sub := range []string{"work", "ipc", "ctx"} {
		if err := unix.Unmount(filepath.Join(path, sub), unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("sandbox: unmount %s: %w", sub, err)
		}
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("sandbox: remove %s: %w", path, err)
	}
	return nil
}

// unmountUnder detaches every mount strictly under path (deepest
// first), as /proc/self/mountinfo lists them.
func unmountUnder(path string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("sandbox: mounts: %w", err)
	}
	var under []string
	prefix := filepath.Clean(path) + "/"
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountPath(f[4])
		if strings.HasPrefix(mp, prefix) {
			under = append(under, mp)
		}
	}
	sort.Slice(under, func(i, j int) bool { return len(under[i]) > len(under[j]) })
	for _, mp := range under {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("sandbox: unmount %s: %w", mp, err)
		}
	}
	return nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// gatewayDir reports whether name is one of the gateway's own
// directories in a state dir (the egress sockets, the volumes, the
// snapshots, the local runtime's shims and fork server): never a
// session's, whatever pattern it matches.
func gatewayDir(name string) bool {
	return name == "egress" || name == "volumes" || name == "snapshots" || name == ShimStateDir || name == ForkServerStateDir
}

// ForkServerStateDir is the directory of a state dir where the local
// runtime's fork server keeps its template's socket, log and caches.
const ForkServerStateDir = "forkserver"

// ShimStateDir is the directory of a state dir where a runtime keeps the
// programs it binds into its sandboxes at ShimDir.
const ShimStateDir = "shims"

// SessionDirs lists the ids of the session directories under stateDir.
func SessionDirs(stateDir string) ([]string, error) {
	ents, err := os.ReadDir(stateDir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: list state dir: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && IDPattern.MatchString(e.Name()) && !gatewayDir(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// IdentityUser is the name the sandbox's one user has inside (USER,
// LOGNAME): whoami, id and a shell's prompt show it.
const IdentityUser = "sandbox"

// IdentityFiles returns the bodies of the synthetic passwd and group
// files (by those names) that name uid and gid the sandbox's user.
func IdentityFiles(uid, gid int) map[string]string {
	return map[string]string{
		"passwd": fmt.Sprintf("%s:x:%d:%d:%s:%s:/bin/bash\n", IdentityUser, uid, gid, IdentityUser, WorkDir),
		"group":  fmt.Sprintf("%s:x:%d:\n", IdentityUser, gid),
	}
}

// WriteIdentity writes dir/passwd and dir/group, the synthetic files a
// runtime binds read-only at /etc/passwd and /etc/group in the sandbox,
// naming uid and gid (the ids the code runs as, seen from inside) the
// sandbox's user, with WorkDir as its home.
func WriteIdentity(dir string, uid, gid int) error {
	for name, body := range IdentityFiles(uid, gid) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("sandbox: write %s: %w", name, err)
		}
	}
	return nil
}
