package workspace

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Change is one path an execution created, modified or deleted.
type Change struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Change string `json:"change"` // created|modified|deleted
}

// Watcher tracks changes in a workspace with inotify. It has no goroutine:
// the owner drains the kernel's event queue with Reset before an execution
// and Changes after it. It is not safe for concurrent use.
type Watcher struct {
	root     *Root
	fd       int
	dirs     map[int32]string // watch descriptor → directory path
	maxDirs  int
	maxPaths int
	pending  map[string]uint8 // path → what happened since Reset
	overflow bool
	buf      []byte
}

const (
	seenCreated uint8 = 1 << iota
	seenModified
	seenDeleted
)

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// NewWatcher watches root's tree: at most maxDirs directories (new ones
// are added as they appear) and at most maxPaths changed paths per
// execution. The caller must Close it.
func NewWatcher(root *Root, maxDirs, maxPaths int) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("workspace: inotify: %w", err)
	}
	w := &Watcher{root: root, fd: fd, dirs: map[int32]string{}, maxDirs: maxDirs, maxPaths: maxPaths,
		pending: map[string]uint8{}, buf: make([]byte, 64<<10)}
	w.addTree("")
	return w, nil
}

// Close releases the inotify descriptor.
func (w *Watcher) Close() error { return unix.Close(w.fd) }

// addTree watches dir and, within the limit, its subdirectories. When
// record is set, files found are recorded as created (they appeared in a
// new directory before its watch existed).
func (w *Watcher) addTree(dir string) { w.walk(dir, false, 0) }

func (w *Watcher) walk(dir string, record bool, depth int) {
	if len(w.dirs) >= w.maxDirs || depth > 32 {
		return
	}
	fd, err := w.root.resolve(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	// Watch through the verified descriptor, never through a path that
	// could be swapped for a symlink.
	wd, err := unix.InotifyAddWatch(w.fd, fmt.Sprintf("/proc/self/fd/%d", fd), watchMask)
	if err != nil {
		return
	}
	_, known := w.dirs[int32(wd)]
	w.dirs[int32(wd)] = dir
	if known {
		// The same directory moved: it is watched already, and listing it
		// again on every move would let the code make the gateway re-read
		// a large tree in a loop.
		return
	}
	entries, _, err := w.root.List(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if record {
			w.note(e.Path, seenCreated)
		}
		if e.Type == "dir" {
			w.walk(e.Path, record, depth+1)
		}
	}
}

func (w *Watcher) note(p string, what uint8) {
	if _, ok := w.pending[p]; !ok && len(w.pending) >= w.maxPaths {
		w.overflow = true
		return
	}
	w.pending[p] |= what
}

// maxDrainEvents bounds the events read per drain, so code that changes
// files in a loop cannot keep the session's worker reading forever; the
// rest is reported as truncated.
const maxDrainEvents = 16384

// drain reads the queued events, at most maxDrainEvents.
func (w *Watcher) drain() {
	seen := 0
	for {
		if seen >= maxDrainEvents {
			w.overflow = true
			return
		}
		n, err := unix.Read(w.fd, w.buf)
		if err != nil || n <= 0 {
			if err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
				w.overflow = true
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			nameBytes := w.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			seen++
			name := string(nameBytes)
			for i := 0; i < len(name); i++ {
				if name[i] == 0 {
					name = name[:i]
					break
				}
			}
			w.handle(ev, name)
		}
	}
}

func (w *Watcher) handle(ev *unix.InotifyEvent, name string) {
	if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
		w.overflow = true
		return
	}
	dir, ok := w.dirs[ev.Wd]
	if !ok {
		return
	}
	if ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF) != 0 {
		delete(w.dirs, ev.Wd)
		return
	}
	if name == "" || len(name) > len(".glassroom-upload-") && name[:len(".glassroom-upload-")] == ".glassroom-upload-" {
		return
	}
	p := path.Join(dir, name)
	isDir := ev.Mask&unix.IN_ISDIR != 0
	switch {
	case ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		if isDir {
			w.walk(p, true, 0)
			return
		}
		w.note(p, seenCreated)
	case ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
		if !isDir {
			w.note(p, seenDeleted)
		}
	case ev.Mask&(unix.IN_MODIFY|unix.IN_CLOSE_WRITE) != 0:
		if !isDir {
			w.note(p, seenModified)
		}
	}
}

// Reset forgets every change so far (call it before an execution).
func (w *Watcher) Reset() {
	w.drain()
	clear(w.pending)
	w.overflow = false
}

// Changes returns what changed since Reset, sorted by path, and whether
// some changes were not tracked (too many, or the event queue overflowed).
func (w *Watcher) Changes() ([]Change, bool) {
	w.drain()
	out := make([]Change, 0, len(w.pending))
	for p, seen := range w.pending {
		st, err := w.root.Stat(p)
		exists := err == nil && st.Type == "file"
		switch {
		case !exists && seen&seenCreated != 0:
			// created and removed again within the execution
		case !exists:
			out = append(out, Change{Path: p, Change: "deleted"})
		case seen&seenCreated != 0 && seen&seenDeleted == 0:
			out = append(out, Change{Path: p, Size: st.Size, Change: "created"})
		default:
			out = append(out, Change{Path: p, Size: st.Size, Change: "modified"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	clear(w.pending)
	truncated := w.overflow
	w.overflow = false
	return out, truncated
}
