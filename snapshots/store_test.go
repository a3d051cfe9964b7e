package snapshots_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/snapshots"
)

func write(t *testing.T, s *snapshots.Store, tenant string, n int) (snapshots.Info, error) {
	t.Helper()
	w, err := s.Create(tenant)
	if err != nil {
		return snapshots.Info{}, err
	}
	if _, err := w.Write([]byte(strings.Repeat("x", n))); err != nil {
		w.Abort()
		return snapshots.Info{}, err
	}
	return w.Commit(snapshots.Info{Session: "s1", Contexts: []snapshots.Context{{Context: "default", Language: "python3"}}})
}

// TestStore: a snapshot is its tenant's (another's id is ErrNotFound);
// its archive reads back as written; the bounds of one snapshot, of a
// tenant's bytes and of its count hold, concurrently written bytes
// included; an aborted or unfinished write leaves nothing; ids that are
// not ids are ErrNotFound, never paths.
func TestStore(t *testing.T) {
	dir := t.TempDir()
	s, err := snapshots.New(snapshots.Config{Dir: dir, MaxBytes: 1 << 20, TenantBytes: 3 << 20, MaxPerTenant: 4})
	if err != nil {
		t.Fatal(err)
	}
	in, err := write(t, s, "a", 1000)
	if err != nil || in.SizeBytes != 1000 || !snapshots.ValidID(in.ID) || in.CreatedAt.IsZero() {
		t.Fatalf("write: %+v %v", in, err)
	}
	got, r, err := s.Open("a", in.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if len(b) != 1000 || got.Session != "s1" || got.Contexts[0].Language != "python3" {
		t.Fatalf("read back %d bytes, %+v", len(b), got)
	}
	for _, f := range []func() error{
		func() error { _, err := s.Get("b", in.ID); return err },
		func() error { _, _, err := s.Open("b", in.ID); return err },
		func() error { return s.Delete("b", in.ID) },
		func() error { _, err := s.Get("a", "../a/"+in.ID); return err },
		func() error { return s.Delete("a", "..") },
	} {
		if err := f(); !errors.Is(err, snapshots.ErrNotFound) {
			t.Fatalf("another tenant's or a bad id: %v", err)
		}
	}
	if list, _ := s.List("b"); len(list) != 0 {
		t.Fatalf("tenant b sees %+v", list)
	}
	if _, err := write(t, s, "a", 1<<20+1); !errors.Is(err, snapshots.ErrTooLarge) {
		t.Fatalf("past MaxBytes: %v", err)
	}
	// Two writers at once share the tenant's room.
	w1, _ := s.Create("a")
	w2, _ := s.Create("a")
	if _, err := w1.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if _, err := write(t, s, "a", 1<<20); !errors.Is(err, snapshots.ErrTooLarge) {
		t.Fatalf("past TenantBytes with writes under way: %v", err)
	}
	w1.Abort()
	if _, err := w2.Commit(snapshots.Info{}); err != nil {
		t.Fatal(err)
	}
	if _, err := write(t, s, "b", 1<<20); err != nil {
		t.Fatalf("another tenant's room is its own: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := write(t, s, "a", 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := write(t, s, "a", 10); !errors.Is(err, snapshots.ErrTooMany) {
		t.Fatalf("past MaxPerTenant: %v", err)
	}
	list, _ := s.List("a")
	if len(list) != 4 || list[0].CreatedAt.Before(list[3].CreatedAt) {
		t.Fatalf("list: %+v", list)
	}
	if err := s.Delete("a", in.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("a", in.ID); !errors.Is(err, snapshots.ErrNotFound) {
		t.Fatalf("deleted: %v", err)
	}
	// An unfinished write (a crash) is gone at the next open.
	w, _ := s.Create("a")
	_, _ = w.Write([]byte("half"))
	if _, err := snapshots.New(snapshots.Config{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*", ".new-*"))
	if len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
