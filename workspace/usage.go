package workspace

import (
	"context"
	"errors"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// maxTreeDepth is how deep below the root a walk of the tree goes (Usage,
// Remove): the code can nest directories far deeper to make one cost
// more.
const maxTreeDepth = 64

// usageBatch is how many names Usage reads from a directory at a time,
// and how often it checks its context.
const usageBatch = 256

// Measuring is a workspace that adds up its files' sizes: *Root, and a
// remote workspace (which asks its server to).
type Measuring interface {
	Usage(ctx context.Context, maxEntries int) (Usage, error)
}

var _ Measuring = (*Root)(nil)

// Usage is what a walk of the workspace counted.
type Usage struct {
	Bytes     int64 // the sizes of the regular files counted
	Entries   int   // the entries examined
	Truncated bool  // a bound stopped the walk: Bytes is a lower bound
}

// Usage adds up the sizes of the regular files in the workspace. It walks
// by descriptor, as Remove does: each directory is opened relative to its
// parent's with O_NOFOLLOW, each entry is described by fstatat
// (AT_SYMLINK_NOFOLLOW) relative to its directory's, so a symlink is never
// followed, even one the code swaps in for a directory mid-walk, and
// nothing on another file system (a mount point) is counted. It examines
// at most maxEntries entries, goes maxTreeDepth directories deep and stops
// when ctx is done, reporting Truncated: a workspace of millions of files
// costs a bounded walk. The error is the root's (ErrClosed).
func (r *Root) Usage(ctx context.Context, maxEntries int) (Usage, error) {
	fd, err := r.resolve("", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return Usage{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return Usage{}, &PathError{Kind: ErrIO, Detail: "stat workspace", Err: err}
	}
	w := usageWalk{ctx: ctx, dev: st.Dev, left: maxEntries}
	w.dir(fd, 0)
	return w.u, nil
}

type usageWalk struct {
	ctx  context.Context
	dev  uint64 // the workspace's file system
	left int    // entries still to examine
	u    Usage
}

// dir counts the entries of directory fd, depth below the root, and
// descends into its subdirectories. It closes fd.
func (w *usageWalk) dir(fd, depth int) {
	f := os.NewFile(uintptr(fd), "workspace")
	defer f.Close()
	for !w.u.Truncated {
		if w.ctx.Err() != nil {
			w.u.Truncated = true
			return
		}
		names, err := f.Readdirnames(usageBatch)
		for _, name := range names {
			if w.left <= 0 {
				w.u.Truncated = true
				return
			}
			w.left--
			w.u.Entries++
			w.entry(fd, name, depth)
			if w.u.Truncated {
				return
			}
		}
		if err != nil || len(names) == 0 {
			return // io.EOF, or a directory the code removed meanwhile
		}
	}
}

// entry counts name in directory fd, depth below the root.
func (w *usageWalk) entry(fd int, name string, depth int) {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Dev != w.dev {
		return // gone meanwhile, or a mount point
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Size > math.MaxInt64-w.u.Bytes { // sparse files of exabytes
			w.u.Bytes = math.MaxInt64
		} else {
			w.u.Bytes += st.Size
		}
	case unix.S_IFDIR:
		if depth >= maxTreeDepth {
			w.u.Truncated = true
			return
		}
		sub, err := openDirAt(fd, name)
		if err != nil {
			return // swapped for a symlink (ELOOP) or a file, or gone: not followed
		}
		// What was opened is the directory now at name, whatever was
		// there at the fstatat: check its file system again.
		if err := unix.Fstat(sub, &st); err != nil || st.Dev != w.dev {
			unix.Close(sub)
			return
		}
		w.dir(sub, depth+1)
	}
}

// openDirAt opens directory name in dirfd for reading, never following a
// symlink.
func openDirAt(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
