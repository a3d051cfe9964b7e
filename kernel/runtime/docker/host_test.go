package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
)

// fakeHostEngine is a hand-written hostEngine: a fixed list of containers,
// from which ContainerRemove takes them.
type fakeHostEngine struct {
	mu      sync.Mutex
	list    []container.Summary
	removed []string
}

func (e *fakeHostEngine) ContainerList(ctx context.Context, _ container.ListOptions) ([]container.Summary, error) {
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("fake: an unbounded Docker call")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list), nil
}

func (e *fakeHostEngine) ContainerRemove(ctx context.Context, id string, opts container.RemoveOptions) error {
	if _, ok := ctx.Deadline(); !ok {
		return errors.New("fake: an unbounded Docker call")
	}
	if !opts.Force {
		return errors.New("fake: removal without force")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	i := slices.IndexFunc(e.list, func(c container.Summary) bool { return c.ID == id })
	if i < 0 {
		return cerrdefs.ErrNotFound
	}
	e.list = slices.Delete(e.list, i, i+1)
	e.removed = append(e.removed, id)
	return nil
}

// hostFixture is three state directories (one a live gateway holds, one
// free, one gone) and glassroom containers of each, with a session
// directory and a deadline for those whose directory exists.
type hostFixture struct {
	live, free, gone string
	engine           *fakeHostEngine
	at               time.Time
}

func newHostFixture(t *testing.T) hostFixture {
	t.Helper()
	root := t.TempDir()
	f := hostFixture{live: filepath.Join(root, "live"), free: filepath.Join(root, "free"), gone: filepath.Join(root, "gone"), at: time.Unix(1_900_000_000, 0)}
	l, err := sandbox.LockStateDir(f.live) // the live gateway's lock
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
	if err := os.Mkdir(f.free, 0o711); err != nil {
		t.Fatal(err)
	}
	c := func(name, instance, stateDir, session string, deadline bool) container.Summary {
		labels := map[string]string{LabelManaged: "true", LabelInstance: instance, LabelSession: session}
		s := container.Summary{ID: "id-" + name, Names: []string{"/" + name}, Labels: labels, State: "running", Created: f.at.Unix() - 3600}
		if stateDir != "" {
			labels[LabelStateDir] = stateDir
		}
		s.Mounts = []container.MountPoint{{Source: filepath.Join(f.free, session, "ipc"), Destination: sandbox.IPCDir}}
		if stateDir != "" {
			s.Mounts[0].Source = filepath.Join(stateDir, session, "ipc")
		}
		if deadline {
			s.Mounts = append(s.Mounts, container.MountPoint{Source: "x", Destination: DeadlineDir})
			dir := filepath.Dir(s.Mounts[0].Source)
			if _, err := os.Stat(filepath.Dir(dir)); err == nil {
				if _, err := newDeadline(mkdir(t, dir), time.Hour, f.at); err != nil {
					t.Fatal(err)
				}
			}
		}
		return s
	}
	f.engine = &fakeHostEngine{list: []container.Summary{
		c("glassroom-default-s-live-0001", "default", f.live, "s-live-0001", true),
		c("glassroom-default-s-free-0001", "default", f.free, "s-free-0001", true),
		c("glassroom-blue-s-free-0002", "blue", f.free, "s-free-0002", true),
		c("glassroom-default-s-gone-0001", "default", f.gone, "s-gone-0001", true),
		c("glassroom-default-s-legacy-01", "default", "", "s-legacy-01", false), // no state-dir label, binds under free
		{ID: "id-unmanaged", Names: []string{"/unmanaged"}, Labels: map[string]string{LabelInstance: "default", LabelStateDir: f.free}},
	}}
	return f
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

func containerNames(list []HostSandbox) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.Container)
	}
	return out
}

// TestHostDescribesOwners: the Host lists the engine's glassroom
// containers (not unmanaged ones) with their state directory (its label,
// or where an older container's binds come from), deadline and owner: a
// live gateway where the state dir's lock is held, none where it is free
// or the directory is gone; within the configured state dirs and
// instance only.
func TestHostDescribesOwners(t *testing.T) {
	f := newHostFixture(t)
	h := newHost(HostConfig{}, f.engine, zerolog.Nop())
	got, err := h.Sandboxes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		stateDir string
		live     bool
		gone     string
		deadline bool
	}{
		"glassroom-default-s-live-0001": {f.live, true, "", true},
		"glassroom-default-s-free-0001": {f.free, false, goneLockFree, true},
		"glassroom-blue-s-free-0002":    {f.free, false, goneLockFree, true},
		"glassroom-default-s-gone-0001": {f.gone, false, goneNoDir, false},
		"glassroom-default-s-legacy-01": {f.free, false, goneLockFree, false},
	}
	if len(got) != len(want) {
		t.Fatalf("listed %v, want the %d managed containers", containerNames(got), len(want))
	}
	for _, s := range got {
		w, ok := want[s.Container]
		if !ok || s.StateDir != w.stateDir || s.Owner.Live != w.live || s.Owner.Gone != w.gone || (w.live && s.Owner.PID != os.Getpid()) {
			t.Errorf("%s: state dir %q, owner %+v; want %+v", s.Container, s.StateDir, s.Owner, w)
		}
		if w.deadline != s.Deadline.Equal(f.at.Add(time.Hour)) || (!w.deadline && s.DeadlineNote == "") {
			t.Errorf("%s: deadline %v %q", s.Container, s.Deadline, s.DeadlineNote)
		}
		if !s.Created.Equal(f.at.Add(-time.Hour)) || s.State != "running" || !strings.HasSuffix(s.Container, s.Session) {
			t.Errorf("%s: %+v", s.Container, s)
		}
	}
	if !strings.HasPrefix(got[0].StateDir, f.free) || got[len(got)-1].StateDir != f.live {
		t.Errorf("not sorted by state dir: %v", containerNames(got))
	}

	h = newHost(HostConfig{StateDirs: []string{f.live, f.gone}, Instance: "default"}, f.engine, zerolog.Nop())
	got, _ = h.Sandboxes(context.Background())
	if w := []string{"glassroom-default-s-gone-0001", "glassroom-default-s-live-0001"}; !slices.Equal(containerNames(got), w) {
		t.Fatalf("within state dirs live and gone, instance default: %v, want %v", containerNames(got), w)
	}
}

// TestHostRemovesOnlyUnowned: RemoveUnowned removes the containers no
// live gateway owns, and the session directories of those whose state dir
// it could lock; never a live gateway's container or directory, nor those
// of a state dir a gateway took after the listing.
func TestHostRemovesOnlyUnowned(t *testing.T) {
	f := newHostFixture(t)
	h := newHost(HostConfig{}, f.engine, zerolog.Nop())
	removed, err := h.RemoveUnowned(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := []string{"glassroom-blue-s-free-0002", "glassroom-default-s-free-0001", "glassroom-default-s-legacy-01", "glassroom-default-s-gone-0001"}
	if !slices.Equal(containerNames(removed), w) {
		t.Fatalf("removed %v, want %v", containerNames(removed), w)
	}
	if len(f.engine.list) != 2 || f.engine.list[0].ID != "id-glassroom-default-s-live-0001" {
		t.Fatalf("left %v, want the live gateway's container and the unmanaged one", f.engine.list)
	}
	for _, dir := range []string{filepath.Join(f.free, "s-free-0001"), filepath.Join(f.free, "s-free-0002")} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the removed sandbox's session directory %s is left: %v", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.live, "s-live-0001", deadlineSub)); err != nil {
		t.Errorf("the live gateway's session directory was touched: %v", err)
	}
	if held, _, _ := sandbox.StateDirOwner(f.free); held {
		t.Error("RemoveUnowned kept the free state dir's lock")
	}

	// A gateway takes the free state dir between the listing and the removal.
	f = newHostFixture(t)
	h = newHost(HostConfig{}, f.engine, zerolog.Nop())
	list := h.describe(f.engine.list, probeOwner, ReadDeadline)
	l, err := sandbox.LockStateDir(f.free)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	removed, err = h.removeUnowned(context.Background(), list, sandbox.LockExistingStateDir)
	if err != nil {
		t.Fatal(err)
	}
	if w := []string{"glassroom-default-s-gone-0001"}; !slices.Equal(containerNames(removed), w) {
		t.Fatalf("with the free state dir taken since the listing: removed %v, want %v", containerNames(removed), w)
	}
}
