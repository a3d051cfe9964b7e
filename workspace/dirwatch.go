package workspace

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DirEvent is one change under a watched directory (E2B's
// FilesystemEvent): Type is create, write, remove, rename or chmod, or
// overflow (events were dropped: the client was too slow, or the watch
// limits were reached), or sync (DirSyncer's barrier); Name is the path
// relative to the watched directory ("" for overflow; the sequence
// number for sync).
type DirEvent struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// maxPendingUploads bounds the renames of temporary files a watch waits
// to see land.
const maxPendingUploads = 256

// DirWatch types.
const (
	DirCreate   = "create"
	DirWrite    = "write"
	DirRemove   = "remove"
	DirRename   = "rename"
	DirChmod    = "chmod"
	DirOverflow = "overflow"
	// DirSync is the barrier DirSyncer.Sync asks for; its Name is the
	// sequence number Sync returned (decimal).
	DirSync = "sync"
)

// DirWatch watches one workspace directory (and with recursive, its
// subdirectories, new ones included, at most maxDirs) on an inotify
// instance of its own, read by one goroutine it owns. Events wait in a
// bounded buffer; when it is full they are dropped and an overflow event
// is delivered once there is room. Close stops the goroutine, waits for
// it and closes Events. Safe for concurrent use.
type DirWatch struct {
	root      *Root
	base      string // the watched directory, workspace-relative
	recursive bool
	maxDirs   int
	f         *os.File // the non-blocking inotify descriptor (in the runtime's poller)
	events    chan DirEvent
	done      chan struct{}

	mu     sync.Mutex // guards dirs and syncWd
	dirs   map[int32]string
	syncWd int32 // the watch of syncDir; 0: none yet

	syncMu     sync.Mutex // guards what follows; taken before mu
	syncDir    string     // a private directory in which Sync makes its marks, made by the first Sync
	syncSeq    uint64
	syncClosed bool
}

const dirWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// WatchDir starts watching dir (a workspace path; it must be a
// directory), buffering at most buffer events. The caller must Close it.
func (r *Root) WatchDir(dir string, recursive bool, maxDirs, buffer int) (*DirWatch, error) {
	dir, err := Clean(dir)
	if err != nil {
		return nil, err
	}
	fd, err := r.resolve(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	_ = unix.Close(fd)
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("workspace: watch: %w", err)
	}
	w := &DirWatch{root: r, base: dir, recursive: recursive, maxDirs: max(1, maxDirs), f: os.NewFile(uintptr(ifd), "inotify"),
		events: make(chan DirEvent, max(1, buffer)), done: make(chan struct{}), dirs: map[int32]string{}}
	overflow := w.add(dir, 0)
	go w.run(overflow)
	return w, nil
}

// DirWatcher is one directory's watch: a *DirWatch, or a remote
// workspace's (workspace/remote). Events is closed by Close, and when the
// watch cannot go on.
type DirWatcher interface {
	Events() <-chan DirEvent
	Close() error
}

// DirWatching is a workspace that watches its directories: *Root, and a
// remote workspace.
type DirWatching interface {
	// WatchDirectory starts watching dir (a directory), with recursive
	// its subdirectories too (at most maxDirs), buffering at most buffer
	// events. The caller must Close the watch.
	WatchDirectory(dir string, recursive bool, maxDirs, buffer int) (DirWatcher, error)
}

var (
	_ DirWatching = (*Root)(nil)
	_ DirWatcher  = (*DirWatch)(nil)
)

// DirSyncer is a DirWatcher with a barrier: *DirWatch (a remote
// workspace's watch has none).
type DirSyncer interface {
	// Sync returns a sequence number n and makes the watch deliver a
	// DirSync event named n after the events of every change made before
	// Sync was called. Numbers grow: a DirSync named n answers the Syncs
	// up to n (one dropped with a full buffer, as any event may be, is
	// answered by the next). Safe for concurrent use; it fails once the
	// watch is closed.
	Sync() (uint64, error)
}

var _ DirSyncer = (*DirWatch)(nil)

// Sync implements DirSyncer. Its mark is a file created (and removed at
// once) in a private directory outside the workspace that the watch's
// own inotify instance watches: inotify queues an instance's events in
// the order they happen, so the mark's event comes after those of every
// change that completed before it. Unique names keep inotify from
// merging two marks into one event.
func (w *DirWatch) Sync() (uint64, error) {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if w.syncClosed {
		return 0, fmt.Errorf("workspace: watch sync: %w", os.ErrClosed)
	}
	if w.syncDir == "" {
		dir, err := os.MkdirTemp("", "glassroom-watch-sync-")
		if err != nil {
			return 0, fmt.Errorf("workspace: watch sync: %w", err)
		}
		var wd int
		err = w.withFd(func(ifd int) error {
			var aerr error
			wd, aerr = unix.InotifyAddWatch(ifd, dir, unix.IN_CREATE|unix.IN_ONLYDIR)
			return aerr
		})
		if err != nil {
			_ = os.Remove(dir)
			return 0, fmt.Errorf("workspace: watch sync: %w", err)
		}
		w.mu.Lock()
		w.syncWd = int32(wd)
		w.mu.Unlock()
		w.syncDir = dir
	}
	w.syncSeq++
	mark := filepath.Join(w.syncDir, strconv.FormatUint(w.syncSeq, 10))
	f, err := os.OpenFile(mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, fmt.Errorf("workspace: watch sync: %w", err)
	}
	_ = f.Close()
	_ = os.Remove(mark)
	return w.syncSeq, nil
}

// WatchDirectory implements DirWatching with WatchDir.
func (r *Root) WatchDirectory(dir string, recursive bool, maxDirs, buffer int) (DirWatcher, error) {
	w, err := r.WatchDir(dir, recursive, maxDirs, buffer)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Events delivers the changes; it is closed by Close.
func (w *DirWatch) Events() <-chan DirEvent { return w.events }

// Close stops watching, waits for the reading goroutine and removes
// Sync's directory.
func (w *DirWatch) Close() error {
	err := w.f.Close() // ends the goroutine's read
	<-w.done
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.syncClosed = true
	if w.syncDir != "" {
		_ = os.RemoveAll(w.syncDir)
	}
	return err
}

// add watches dir (and, recursively, its subdirectories); it reports
// whether a limit was reached. Called before run or from run only.
func (w *DirWatch) add(dir string, depth int) (overflow bool) {
	w.mu.Lock()
	n := len(w.dirs)
	w.mu.Unlock()
	if n >= w.maxDirs || depth > 32 {
		return true
	}
	fd, err := w.root.resolve(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return false // gone already
	}
	defer unix.Close(fd)
	var wd int
	err = w.withFd(func(ifd int) error {
		var aerr error
		wd, aerr = unix.InotifyAddWatch(ifd, fmt.Sprintf("/proc/self/fd/%d", fd), dirWatchMask)
		return aerr
	})
	if err != nil {
		return true
	}
	w.mu.Lock()
	_, known := w.dirs[int32(wd)]
	w.dirs[int32(wd)] = dir
	w.mu.Unlock()
	if known || !w.recursive {
		return false
	}
	entries, _, err := w.root.List(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Type == "dir" && w.add(e.Path, depth+1) {
			overflow = true
		}
	}
	return overflow
}

func (w *DirWatch) withFd(fn func(fd int) error) error {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// run reads the instance until Close.
func (w *DirWatch) run(overflow bool) {
	defer close(w.done)
	defer close(w.events)
	buf := make([]byte, 64*1024)
	uploads := map[uint32]bool{} // cookies of files-API writes being renamed into place
	emit := func(ev DirEvent) {
		if overflow {
			select {
			case w.events <- DirEvent{Type: DirOverflow}:
				overflow = false
			default:
				return
			}
		}
		select {
		case w.events <- ev:
		default:
			overflow = true
		}
	}
	if overflow {
		overflow = false
		emit(DirEvent{Type: DirOverflow})
	}
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)])
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if i := strings.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				overflow = true
				continue
			}
			w.mu.Lock()
			if w.syncWd != 0 && ev.Wd == w.syncWd {
				w.mu.Unlock()
				if ev.Mask&unix.IN_CREATE != 0 {
					emit(DirEvent{Type: DirSync, Name: name})
				}
				continue
			}
			dir, ok := w.dirs[ev.Wd]
			if ok && ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF) != 0 {
				delete(w.dirs, ev.Wd)
				ok = false
			}
			w.mu.Unlock()
			if !ok || name == "" {
				continue
			}
			if strings.HasPrefix(name, uploadPrefix) {
				if ev.Mask&unix.IN_MOVED_FROM != 0 {
					if len(uploads) >= maxPendingUploads {
						clear(uploads)
					}
					uploads[ev.Cookie] = true
				}
				continue
			}
			p := path.Join(dir, name)
			rel := strings.TrimPrefix(strings.TrimPrefix(p, w.base), "/")
			isDir := ev.Mask&unix.IN_ISDIR != 0
			switch {
			case ev.Mask&unix.IN_MOVED_TO != 0 && !isDir && uploads[ev.Cookie]:
				// A files-API write landing (Root.Write: a temporary
				// file renamed into place): the file's create, its owner
				// and mode, and its content, as an in-place write of a
				// new file shows them.
				delete(uploads, ev.Cookie)
				emit(DirEvent{Type: DirCreate, Name: rel})
				emit(DirEvent{Type: DirChmod, Name: rel})
				emit(DirEvent{Type: DirWrite, Name: rel})
			case ev.Mask&unix.IN_CREATE != 0:
				emit(DirEvent{Type: DirCreate, Name: rel})
				if isDir && w.recursive && w.add(p, 0) {
					overflow = true
				}
			case ev.Mask&unix.IN_MOVED_TO != 0:
				emit(DirEvent{Type: DirCreate, Name: rel})
				if isDir && w.recursive && w.add(p, 0) {
					overflow = true
				}
			case ev.Mask&unix.IN_MOVED_FROM != 0:
				emit(DirEvent{Type: DirRename, Name: rel})
			case ev.Mask&unix.IN_DELETE != 0:
				emit(DirEvent{Type: DirRemove, Name: rel})
			case ev.Mask&unix.IN_MODIFY != 0:
				emit(DirEvent{Type: DirWrite, Name: rel})
			case ev.Mask&unix.IN_ATTRIB != 0:
				emit(DirEvent{Type: DirChmod, Name: rel})
			}
		}
	}
}
