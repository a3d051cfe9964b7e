package volumes_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/glassroom/glassroom/testkit"
	"github.com/glassroom/glassroom/volumes"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, dir string) *volumes.Store {
	t.Helper()
	testkit.RealThing(t, "loop-mounted volumes")
	s, err := volumes.Open(context.Background(), volumes.Config{Dir: dir, DefaultMB: 16, MaxMB: 64, MaxPerTenant: 2}, zerolog.Nop())
	if errors.Is(err, volumes.ErrUnsupported) {
		testkit.Unavailable(t, "volumes: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// unmountAll lets the test's directory go.
func unmountAll(t *testing.T, dir string) {
	t.Cleanup(func() {
		mnts, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
		for _, m := range mnts {
			_ = unix.Unmount(m, unix.MNT_DETACH)
		}
	})
}

// TestVolumes: a volume is an image of its size (writing past it is
// ENOSPC), open to any sandbox user, listed for its tenant only; a
// mounted one cannot be deleted; it is mounted again when the store
// opens after a reboot.
func TestVolumes(t *testing.T) {
	dir := t.TempDir()
	unmountAll(t, dir)
	s := open(t, dir)
	ctx := context.Background()
	if _, err := s.Create(ctx, "tenant-a", "Bad Name", 0); err == nil {
		t.Fatal("a bad name was taken")
	}
	if _, err := s.Create(ctx, "tenant-a", "data", 1<<20); err == nil {
		t.Fatal("a size past the maximum was taken")
	}
	// No overcommit: a volume bigger than the disk's free space is refused.
	big, err := volumes.Open(ctx, volumes.Config{Dir: dir, DefaultMB: 16, MaxMB: 1 << 30}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := big.Create(ctx, "tenant-a", "huge", 1<<30); !errors.Is(err, volumes.ErrNoRoom) {
		t.Fatalf("a volume of 1 PiB: %v", err)
	}
	v, err := s.Create(ctx, "tenant-a", "data", 0)
	if err != nil || v.SizeMB != 16 || v.Name != "data" {
		t.Fatalf("create: %+v %v", v, err)
	}
	if _, err := s.Create(ctx, "tenant-a", "data", 0); !errors.Is(err, volumes.ErrExists) {
		t.Fatalf("again: %v", err)
	}
	if _, err := s.Create(ctx, "tenant-a", "two", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "tenant-a", "three", 0); !errors.Is(err, volumes.ErrTooMany) {
		t.Fatalf("past the tenant's count: %v", err)
	}
	// Another tenant: its own namespace.
	if l, _ := s.List("tenant-b"); len(l) != 0 {
		t.Fatalf("tenant-b sees %+v", l)
	}
	if _, err := s.Get("tenant-b", "data"); !errors.Is(err, volumes.ErrNotFound) {
		t.Fatalf("tenant-b gets tenant-a's: %v", err)
	}
	if _, _, err := s.Acquire(ctx, "tenant-b", "data"); !errors.Is(err, volumes.ErrNotFound) {
		t.Fatalf("tenant-b mounts tenant-a's: %v", err)
	}

	host, release, err := s.Acquire(ctx, "tenant-a", "data")
	if err != nil {
		t.Fatal(err)
	}
	// A sandbox user (not root, umask 077) creates a file: another
	// sandbox user may write it. (They reach the volume by its root, as a
	// bind mount gives it: the host's path is root's only.)
	root, err := os.Open(host)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	write := func(text string) func() error {
		return func() error {
			fd, err := unix.Openat(int(root.Fd()), "shared.txt", unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, 0o666)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			_, err = unix.Write(fd, []byte(text))
			return err
		}
	}
	syscall.Umask(0o077)
	err = asUser(252_001, write("one"))
	syscall.Umask(0o022)
	if err != nil {
		t.Fatal(err)
	}
	if err := asUser(252_002, write("two")); err != nil {
		t.Fatalf("another sandbox's user: %v", err)
	}
	// The quota: 16 MiB.
	err = os.WriteFile(filepath.Join(host, "big"), bytes.Repeat([]byte("x"), 20<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("past the quota: %v", err)
	}
	os.Remove(filepath.Join(host, "big"))
	if in, _ := s.Get("tenant-a", "data"); in.Mounts != 1 || in.UsedBytes <= 0 {
		t.Fatalf("info %+v", in)
	}
	if err := s.Delete(ctx, "tenant-a", "data"); !errors.Is(err, volumes.ErrInUse) {
		t.Fatalf("delete while mounted: %v", err)
	}
	release()
	release() // idempotent

	// After a reboot (nothing mounted), the store mounts it again.
	root.Close()
	if err := unix.Unmount(host, 0); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	if b, err := os.ReadFile(filepath.Join(host, "shared.txt")); err != nil || string(b) != "two" {
		t.Fatalf("after a reboot: %q %v", b, err)
	}
	if err := s.Delete(ctx, "tenant-a", "data"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("tenant-a", "data"); !errors.Is(err, volumes.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if l, _ := s.List("tenant-a"); len(l) != 1 || l[0].Name != "two" {
		t.Fatalf("list %+v", l)
	}
}

// asUser runs f on a locked thread whose uid is uid (a raw setresuid is
// the thread's alone); the thread dies with its goroutine.
func asUser(uid int, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(uid), uintptr(uid), 0); e != 0 {
			errc <- e
			return
		}
		errc <- f()
		// never unlocked: the thread, not root any more, dies with the goroutine
	}()
	return <-errc
}
