package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Root is an open workspace directory. Its methods are safe for concurrent
// use; Close releases the directory descriptor.
type Root struct {
	dir      string
	uid, gid int // owner of the workspace; created files are given to it

	// mu guards fd against Close: every use of fd holds it for reading for
	// one syscall and works on descriptors of its own afterwards, so a
	// closed fd number (soon reused, perhaps for another session's
	// workspace) is never used, and Close never waits for slow I/O.
	mu     sync.RWMutex
	fd     int
	closed bool
}

// Open opens the workspace at dir, which the caller trusts (it created it).
func Open(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &PathError{Kind: ErrIO, Detail: "open workspace", Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &PathError{Kind: ErrIO, Detail: "stat workspace", Err: err}
	}
	return &Root{dir: dir, fd: fd, uid: int(st.Uid), gid: int(st.Gid)}, nil
}

// OpenAs opens the workspace at dir like Open, but gives what it creates
// to uid:gid instead of the directory's owner: for a process that runs as
// the sandbox's own uid in a directory it does not own (a Kubernetes
// emptyDir is root's, shared through fsGroup).
func OpenAs(dir string, uid, gid int) (*Root, error) {
	r, err := Open(dir)
	if err != nil {
		return nil, err
	}
	r.uid, r.gid = uid, gid
	return r, nil
}

// Close releases the root.
func (r *Root) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return unix.Close(r.fd)
}

// openat2 resolves p against the root descriptor, if the root is open.
func (r *Root) openat2(p string, how *unix.OpenHow) (int, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return -1, ErrClosed
	}
	return unix.Openat2(r.fd, p, how)
}

// resolve opens p beneath the root without following any symlink.
func (r *Root) resolve(p string, flags uint64, mode uint64) (int, error) {
	if p == "" {
		p = "."
	}
	how := &unix.OpenHow{
		Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Mode:  mode,
		// Mount points are crossed: the only mounts under a workspace on
		// the host are the gateway's (volumes); the code's own mounts
		// stay in its namespace.
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := r.openat2(p, how)
		if errors.Is(err, unix.EINTR) || (errors.Is(err, unix.EAGAIN) && flags&unix.O_PATH != 0) {
			continue // EAGAIN without O_PATH is a lease held by the code: fail, never spin
		}
		if errors.Is(err, ErrClosed) {
			return -1, pathErr(ErrClosed, p, "")
		}
		if err != nil {
			return -1, mapErr(p, err)
		}
		return fd, nil
	}
}

func mapErr(p string, err error) error {
	kind := ErrIO
	switch {
	case errors.Is(err, unix.ENOENT):
		kind = ErrNotFound
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		kind = ErrSymlink
	case errors.Is(err, unix.ENOTDIR):
		kind = ErrNotDir
	case errors.Is(err, unix.EISDIR):
		kind = ErrIsDir
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT), errors.Is(err, unix.EFBIG):
		kind = ErrFull
	case errors.Is(err, unix.EEXIST):
		kind = ErrExists
	case errors.Is(err, unix.EAGAIN):
		kind = ErrBusy
	}
	return &PathError{Kind: kind, Path: p, Err: err}
}

// OpenFile opens the regular file at p for reading. The caller closes it.
func (r *Root) OpenFile(p string) (io.ReadSeekCloser, os.FileInfo, error) {
	p, err := Clean(p)
	if err != nil {
		return nil, nil, err
	}
	fd, err := r.resolve(p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), path.Base("/"+p))
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, &PathError{Kind: ErrIO, Path: p, Err: err}
	}
	if info.IsDir() {
		f.Close()
		return nil, nil, pathErr(ErrIsDir, p, "")
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, pathErr(ErrBadPath, p, "not a regular file")
	}
	return f, info, nil
}

// mkdirs opens directory dir (creating missing parents, owned by the
// workspace owner) and returns its descriptor.
func (r *Root) mkdirs(dir string) (int, error) {
	fd, err := r.resolve("", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, err
	}
	if dir == "" {
		return fd, nil
	}
	cur := ""
	for _, seg := range splitPath(dir) {
		cur = path.Join(cur, seg)
		err := unix.Mkdirat(fd, seg, 0o755)
		if err == nil {
			_ = unix.Fchownat(fd, seg, r.uid, r.gid, unix.AT_SYMLINK_NOFOLLOW)
		} else if !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return -1, mapErr(cur, err)
		}
		next, err := r.resolve(cur, unix.O_PATH|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

func splitPath(p string) []string {
	var out []string
	for p != "" {
		dir, file := path.Split(p)
		out = append([]string{file}, out...)
		p = path.Clean(dir)
		if p == "." || p == "/" {
			break
		}
	}
	return out
}

// uploadPrefix names Write's temporary files: listings, the execution
// tracker and watches never show them by their own name.
const uploadPrefix = ".glassroom-upload-"

// Write stores src at p: parents are created, the data goes to a temporary
// file that is renamed into place, so a failed or oversized upload leaves
// the previous content untouched and a reader sees the old content or the
// new, never a mix. A regular file it replaces keeps its permission bits
// (an edited script stays executable); a new file is 0644. It returns the
// bytes written.
func (r *Root) Write(p string, src io.Reader) (int64, error) {
	p, err := Clean(p)
	if err != nil {
		return 0, err
	}
	if p == "" {
		return 0, pathErr(ErrBadPath, "", "empty file name")
	}
	dir, base := path.Split(p)
	dirfd, err := r.mkdirs(path.Clean("/" + dir)[1:])
	if err != nil {
		return 0, err
	}
	defer unix.Close(dirfd)
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := uploadPrefix + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return 0, mapErr(p, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	n, err := io.Copy(f, src)
	if err == nil {
		err = unix.Fchown(fd, r.uid, r.gid)
	}
	if err == nil {
		err = keepMode(dirfd, base, fd)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, base)
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EFBIG) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EISDIR) {
			return n, mapErr(p, err)
		}
		return n, &PathError{Kind: ErrIO, Path: p, Detail: "write", Err: err}
	}
	return n, nil
}

// keepMode gives the temporary file fd the permission bits of the regular
// file name in dirfd, if there is one (never following a symlink).
func keepMode(dirfd int, name string, fd int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil // nothing to keep: a new file, or no regular file in the way
	}
	return unix.Fchmod(fd, st.Mode&0o777)
}

// Entry describes one directory entry.
type Entry struct {
	Name  string    `json:"name"`
	Path  string    `json:"path"`
	Size  int64     `json:"size"`
	MTime time.Time `json:"mtime"`
	Type  string    `json:"type"` // file, dir, symlink or other
	Mode  uint32    `json:"mode"` // permission bits (with setuid, setgid and sticky): at most 0o7777
	// For a symlink: SymlinkTarget is where it points, as the kernels see
	// it (an absolute path under SandboxRoot when that is in the
	// workspace, else the link's text, at most MaxPathBytes), and
	// TargetType the type of what it points to when that is in the
	// workspace and no further symlink ("" otherwise).
	SymlinkTarget string `json:"symlink_target,omitempty"`
	TargetType    string `json:"target_type,omitempty"`
	// Metadata is a regular file's (SetMetadata, or user.e2b. attributes
	// its code set), nil when it has none.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// MaxListEntries bounds one listing.
const MaxListEntries = 10000

// maxListMetadata bounds the metadata one listing carries (code in the
// sandbox sets it on as many files as it likes): past it, entries come
// without (Stat still gives a file's).
const maxListMetadata = 1 << 20

// List returns the entries of directory dir, sorted by name, at most
// MaxListEntries (truncated reports more). Symlinks are listed, not followed.
func (r *Root) List(dir string) (entries []Entry, truncated bool, err error) {
	dir, err = Clean(dir)
	if err != nil {
		return nil, false, err
	}
	fd, err := r.resolve(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, false, err
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	names, err := f.Readdirnames(MaxListEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, &PathError{Kind: ErrIO, Path: dir, Detail: "list", Err: err}
	}
	if len(names) > MaxListEntries {
		names, truncated = names[:MaxListEntries], true
	}
	sort.Strings(names)
	entries = make([]Entry, 0, len(names))
	metaBytes := 0 // the listing's metadata so far: past maxListMetadata, the rest goes without
	for _, name := range names {
		if len(name) > len(uploadPrefix) && strings.HasPrefix(name, uploadPrefix) {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // removed meanwhile
		}
		e := Entry{Name: name, Path: path.Join(dir, name), Size: st.Size,
			MTime: time.Unix(st.Mtim.Unix()).UTC(), Type: fileType(st.Mode), Mode: st.Mode & 0o7777}
		switch e.Type {
		case "symlink":
			r.describeLink(fd, dir, name, &e)
		case "file":
			if metaBytes < maxListMetadata {
				e.Metadata = readMetadata(fd, name)
				for k, v := range e.Metadata {
					metaBytes += len(k) + len(v)
				}
			}
		}
		entries = append(entries, e)
	}
	return entries, truncated, nil
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "symlink"
	}
	return "other"
}

// Stat describes p without following a final symlink.
func (r *Root) Stat(p string) (Entry, error) { return r.stat(p, true) }

// stat is Stat; describe says whether a symlink's target is described
// (not for a target itself: a cycle of links would never end).
func (r *Root) stat(p string, describe bool) (Entry, error) {
	p, err := Clean(p)
	if err != nil {
		return Entry{}, err
	}
	dir, base := path.Split(p)
	fd, err := r.resolve(path.Clean("/" + dir)[1:], unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return Entry{}, err
	}
	defer unix.Close(fd)
	if base == "" {
		base = "."
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Entry{}, mapErr(p, err)
	}
	e := Entry{Name: base, Path: p, Size: st.Size, MTime: time.Unix(st.Mtim.Unix()).UTC(), Type: fileType(st.Mode), Mode: st.Mode & 0o7777}
	switch {
	case e.Type == "symlink" && describe:
		r.describeLink(fd, path.Clean("/" + dir)[1:], base, &e)
	case e.Type == "file":
		e.Metadata = readMetadata(fd, base)
	}
	return e, nil
}

// describeLink fills a symlink's SymlinkTarget and TargetType: name in
// dirfd (the directory dir of the workspace). Its target is looked at
// only inside the workspace, through Stat (never following a link).
func (r *Root) describeLink(dirfd int, dir, name string, e *Entry) {
	buf := make([]byte, MaxPathBytes+1)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil || n == 0 || n > MaxPathBytes {
		return
	}
	text := string(buf[:n])
	e.SymlinkTarget = text
	target := text
	if !path.IsAbs(text) {
		target = path.Join(SandboxRoot, dir, text)
	}
	rel, ok := RelativeToRoot(path.Clean(target))
	if !ok {
		return // outside the workspace: its text, no type
	}
	e.SymlinkTarget = path.Join(SandboxRoot, rel)
	if rel == "" {
		e.TargetType = "dir"
		return
	}
	if t, err := r.stat(rel, false); err == nil && t.Type != "symlink" {
		e.TargetType = t.Type
	}
}

// Remove deletes the file, symlink (not its target) or directory tree at p.
func (r *Root) Remove(p string) error {
	p, err := Clean(p)
	if err != nil {
		return err
	}
	if p == "" {
		return pathErr(ErrBadPath, "", "refusing to remove the workspace root")
	}
	dir, base := path.Split(p)
	dirfd, err := r.resolve(path.Clean("/" + dir)[1:], unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	return removeAt(dirfd, base, p, 0)
}

// removeAt removes name in dirfd, descending into directories through
// descriptors opened with O_NOFOLLOW, so a symlink is unlinked, never
// followed.
func removeAt(dirfd int, name, shown string, depth int) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return mapErr(shown, err)
	}
	if depth > maxTreeDepth {
		return pathErr(ErrBadPath, shown, "directory tree too deep")
	}
	fd, err := openDirAt(dirfd, name)
	if err != nil {
		return mapErr(shown, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	// Another file system is a volume the gateway mounted there: it
	// outlives the session, and is never emptied by a remove of the
	// workspace's (files inside it are removed one path at a time).
	var parent, here unix.Stat_t
	if unix.Fstat(dirfd, &parent) != nil || unix.Fstat(fd, &here) != nil || parent.Dev != here.Dev {
		return pathErr(ErrBusy, shown, "a volume is mounted here: it is removed with its volume (DELETE /v1/volumes/{name}), not as a directory")
	}
	for {
		// Read a batch, remove it, and read again from the start: removing
		// entries while reading on can make a directory stream skip some.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return &PathError{Kind: ErrIO, Path: shown, Detail: "remove", Err: err}
		}
		names, _ := f.Readdirnames(256)
		if len(names) == 0 {
			break
		}
		for _, n := range names {
			if err := removeAt(fd, n, path.Join(shown, n), depth+1); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil {
		return mapErr(shown, err)
	}
	return nil
}

// MakeDir creates directory p and its missing parents, owned by the
// workspace owner. An existing directory is not an error; a file in the
// way is ErrNotDir.
func (r *Root) MakeDir(p string) error {
	p, err := Clean(p)
	if err != nil {
		return err
	}
	if p == "" {
		return nil
	}
	fd, err := r.mkdirs(p)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// Renamer is an FS that can move a file or directory (*Root is one).
type Renamer interface {
	// Rename moves from to to (creating to's missing parents), never
	// replacing: an existing to is ErrExists, a missing from ErrNotFound.
	Rename(from, to string) error
}

var _ Renamer = (*Root)(nil)

// Rename implements Renamer: renameat2(RENAME_NOREPLACE) between the two
// parents, each opened without following a symlink out of the workspace;
// the entry moved is never followed (a symlink moves as a symlink).
func (r *Root) Rename(from, to string) error {
	from, err := Clean(from)
	if err != nil {
		return err
	}
	if to, err = Clean(to); err != nil {
		return err
	}
	if from == "" || to == "" {
		return pathErr(ErrBadPath, "", "refusing to move the workspace root")
	}
	if to == from || strings.HasPrefix(to, from+"/") {
		return pathErr(ErrBadPath, to, "cannot move a directory into itself")
	}
	fdir, fbase := path.Split(from)
	fromfd, err := r.resolve(path.Clean("/" + fdir)[1:], unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fromfd)
	tdir, tbase := path.Split(to)
	tofd, err := r.mkdirs(path.Clean("/" + tdir)[1:])
	if err != nil {
		return err
	}
	defer unix.Close(tofd)
	if err := unix.Renameat2(fromfd, fbase, tofd, tbase, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
			return pathErr(ErrExists, to, "the destination exists")
		}
		if errors.Is(err, unix.ENOENT) {
			return mapErr(from, err)
		}
		return mapErr(to, err)
	}
	return nil
}
