package workspace

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Change is one path an execution created, modified or deleted.
type Change struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Change string `json:"change"` // created|modified|deleted
}

// Inotify shares inotify instances among the watchers of many workspaces.
// The kernel allows each user few instances (fs.inotify.max_user_instances,
// often 128), so one instance per session would stop tracking past about a
// hundred sessions. Watchers are grouped, PerInstance to an instance; any
// watcher's drain reads its instance's queue and hands each event to the
// watcher that owns its watch. No goroutine reads: the queue is drained by
// the watchers' owners, before and after each execution. Inotify is safe
// for concurrent use; Close it after every watcher.
type Inotify struct {
	perInstance int

	mu        sync.Mutex
	instances []*instance
	closed    bool
}

// DefaultWatchersPerInstance is how many watchers share one instance: 300
// sessions take 10 instances.
const DefaultWatchersPerInstance = 32

// NewInotify returns shared instances, perInstance watchers each (0: the
// default).
func NewInotify(perInstance int) *Inotify {
	if perInstance <= 0 {
		perInstance = DefaultWatchersPerInstance
	}
	return &Inotify{perInstance: perInstance}
}

// instance is one inotify descriptor and the watchers registered on it.
type instance struct {
	fd int

	mu       sync.Mutex // guards owners and the reading of fd
	owners   map[int32]*Watcher
	watchers int
	buf      []byte
}

// take returns an instance with room for one more watcher.
func (n *Inotify) take() (*instance, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("workspace: inotify closed")
	}
	for _, in := range n.instances {
		in.mu.Lock()
		room := in.watchers < n.perInstance
		if room {
			in.watchers++
		}
		in.mu.Unlock()
		if room {
			return in, nil
		}
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("workspace: inotify (%d instances in use; raise fs.inotify.max_user_instances): %w", len(n.instances), err)
	}
	in := &instance{fd: fd, owners: map[int32]*Watcher{}, watchers: 1, buf: make([]byte, 64<<10)}
	n.instances = append(n.instances, in)
	return in, nil
}

// Instances returns how many inotify instances are open.
func (n *Inotify) Instances() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.instances)
}

// Close releases every instance. Watchers must be closed first.
func (n *Inotify) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	var errs []error
	for _, in := range n.instances {
		errs = append(errs, unix.Close(in.fd))
	}
	n.instances = nil
	return errors.Join(errs...)
}

// Watcher tracks changes in one workspace. It implements Tracker: its
// owner calls Reset before an execution and Changes after it, and those
// are not safe for concurrent use with each other. Other watchers of the
// same instance may deliver events to it at any time (under its lock).
type Watcher struct {
	root     *Root
	in       *instance
	own      *Inotify // set when the watcher has its instance to itself
	maxDirs  int
	maxPaths int

	mu       sync.Mutex // guards everything below; taken after in.mu
	dirs     map[int32]string
	pending  map[string]uint8 // path → what happened since Reset
	overflow bool
	closed   bool
}

const (
	seenCreated uint8 = 1 << iota
	seenModified
	seenDeleted
)

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// NewWatcher watches root's tree on an instance of its own: at most
// maxDirs directories (new ones are added as they appear) and at most
// maxPaths changed paths per execution. Gateways with many sessions use
// Inotify.Watch instead. The caller must Close it.
func NewWatcher(root *Root, maxDirs, maxPaths int) (*Watcher, error) {
	n := NewInotify(1)
	w, err := n.Watch(root, maxDirs, maxPaths)
	if err != nil {
		_ = n.Close()
		return nil, err
	}
	w.own = n
	return w, nil
}

// Watch watches root's tree on a shared instance (see NewWatcher for the
// bounds). The caller must Close the watcher.
func (n *Inotify) Watch(root *Root, maxDirs, maxPaths int) (*Watcher, error) {
	in, err := n.take()
	if err != nil {
		return nil, err
	}
	w := &Watcher{root: root, in: in, maxDirs: maxDirs, maxPaths: maxPaths, dirs: map[int32]string{}, pending: map[string]uint8{}}
	in.mu.Lock()
	defer in.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.walk("", false, 0)
	return w, nil
}

// Close stops watching; a watcher with its own instance closes it.
func (w *Watcher) Close() error {
	w.in.mu.Lock()
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		for wd := range w.dirs {
			delete(w.in.owners, wd)
			_, _ = unix.InotifyRmWatch(w.in.fd, uint32(wd))
		}
		w.dirs = nil
		w.in.watchers--
	}
	w.mu.Unlock()
	w.in.mu.Unlock()
	if w.own != nil {
		return w.own.Close()
	}
	return nil
}

// walk watches dir and, within the limit, its subdirectories. When
// record is set, files found are recorded as created (they appeared in a
// new directory before its watch existed). The caller holds in.mu and w.mu.
func (w *Watcher) walk(dir string, record bool, depth int) {
	if w.closed {
		return
	}
	if len(w.dirs) >= w.maxDirs || depth > 32 {
		w.overflow = true // changes below go unseen: reported as truncated
		return
	}
	fd, err := w.root.resolve(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	// Watch through the verified descriptor, never through a path that
	// could be swapped for a symlink.
	wd, err := unix.InotifyAddWatch(w.in.fd, fmt.Sprintf("/proc/self/fd/%d", fd), watchMask)
	if err != nil {
		w.overflow = true // out of watches (fs.inotify.max_user_watches): say so
		return
	}
	_, known := w.dirs[int32(wd)]
	w.dirs[int32(wd)] = dir
	w.in.owners[int32(wd)] = w
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

// note records what happened to p. The caller holds w.mu.
func (w *Watcher) note(p string, what uint8) {
	if _, ok := w.pending[p]; !ok && len(w.pending) >= w.maxPaths {
		w.overflow = true
		return
	}
	w.pending[p] |= what
}

// maxDrainEvents bounds the events read per drain, so code that changes
// files in a loop cannot keep a worker reading forever; the rest is
// reported as truncated.
const maxDrainEvents = 16384

// drain reads the instance's queued events, at most maxDrainEvents, and
// hands each to the watcher that owns its watch.
func (w *Watcher) drain() {
	in := w.in
	in.mu.Lock()
	defer in.mu.Unlock()
	seen := 0
	for {
		if seen >= maxDrainEvents {
			in.overflowAll()
			return
		}
		n, err := unix.Read(in.fd, in.buf)
		if err != nil || n <= 0 {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				in.overflowAll()
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&in.buf[off]))
			nameBytes := in.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			seen++
			name := string(nameBytes)
			if i := strings.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				in.overflowAll()
				continue
			}
			if owner := in.owners[ev.Wd]; owner != nil {
				owner.mu.Lock()
				owner.handle(ev, name)
				owner.mu.Unlock()
			}
		}
	}
}

// overflowAll marks every watcher of the instance truncated: its shared
// queue lost events. The caller holds in.mu.
func (in *instance) overflowAll() {
	seen := map[*Watcher]bool{}
	for _, w := range in.owners {
		if !seen[w] {
			seen[w] = true
			w.mu.Lock()
			w.overflow = true
			w.mu.Unlock()
		}
	}
}

// handle applies one event. The caller holds in.mu and w.mu.
func (w *Watcher) handle(ev *unix.InotifyEvent, name string) {
	dir, ok := w.dirs[ev.Wd]
	if !ok || w.closed {
		return
	}
	if ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF) != 0 {
		delete(w.dirs, ev.Wd)
		delete(w.in.owners, ev.Wd)
		return
	}
	if name == "" || strings.HasPrefix(name, uploadPrefix) {
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
	w.mu.Lock()
	clear(w.pending)
	w.overflow = false
	w.mu.Unlock()
}

// Changes returns what changed since Reset, sorted by path, and whether
// some changes were not tracked (too many, or the event queue overflowed).
func (w *Watcher) Changes() ([]Change, bool) {
	w.drain()
	w.mu.Lock()
	pending := w.pending
	w.pending = map[string]uint8{}
	truncated := w.overflow
	w.overflow = false
	w.mu.Unlock()
	out := make([]Change, 0, len(pending))
	for p, seen := range pending {
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
	return out, truncated
}
