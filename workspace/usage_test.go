package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/workspace"
)

// TestUsageCountsRegularFilesOnly: Usage adds up the regular files of the
// tree, never what a symlink (to a file or a directory, inside or outside
// the workspace) points to.
func TestUsageCountsRegularFilesOnly(t *testing.T) {
	r, ws, base := setup(t)
	os.MkdirAll(filepath.Join(ws, "d/e"), 0o755)
	os.WriteFile(filepath.Join(ws, "one"), []byte("1"), 0o644)
	os.WriteFile(filepath.Join(ws, "d/two"), []byte("22"), 0o644)
	os.WriteFile(filepath.Join(ws, "d/e/three"), []byte("333"), 0o644)
	os.Symlink(filepath.Join(base, "other"), filepath.Join(ws, "otherws"))
	os.Symlink(filepath.Join(base, "outside"), filepath.Join(ws, "out"))
	os.Symlink("..", filepath.Join(ws, "d/e/up"))
	os.Symlink("one", filepath.Join(ws, "alias"))
	u, err := r.Usage(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if want := (workspace.Usage{Bytes: 6, Entries: 9}); u != want {
		t.Fatalf("usage %+v, want %+v", u, want)
	}
}

// TestUsageBounds: the entries examined, the depth and the context each
// stop the walk, which says it was cut short.
func TestUsageBounds(t *testing.T) {
	r, ws, _ := setup(t)
	for i := range 10 {
		os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d", i)), []byte("x"), 0o644)
	}
	if u, _ := r.Usage(context.Background(), 10); u != (workspace.Usage{Bytes: 10, Entries: 10}) {
		t.Errorf("usage within the bound: %+v", u)
	}
	if u, _ := r.Usage(context.Background(), 4); u != (workspace.Usage{Bytes: 4, Entries: 4, Truncated: true}) {
		t.Errorf("usage past the bound: %+v", u)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if u, _ := r.Usage(ctx, 1000); !u.Truncated || u.Bytes != 0 {
		t.Errorf("usage with a done context: %+v", u)
	}

	r2, ws2, _ := setup(t)
	deep := filepath.Join(ws2, strings.Repeat("d/", 70))
	os.MkdirAll(deep, 0o755)
	os.WriteFile(filepath.Join(deep, "bottom"), []byte("too deep"), 0o644)
	os.WriteFile(filepath.Join(ws2, "d/top"), []byte("top"), 0o644)
	if u, _ := r2.Usage(context.Background(), 1000); !u.Truncated || u.Bytes != 3 {
		t.Errorf("usage of a deep tree: %+v, want 3 bytes, truncated", u)
	}
}

func TestUsageOfAClosedRoot(t *testing.T) {
	r, _, _ := setup(t)
	r.Close()
	if _, err := r.Usage(context.Background(), 10); !errors.Is(err, workspace.ErrClosed) {
		t.Fatalf("usage of a closed root: %v", err)
	}
}

// BenchmarkUsage10kFiles measures one walk of a workspace of 10,000 files
// in 100 directories (the session metrics' disk use without a file
// system of its own).
func BenchmarkUsage10kFiles(b *testing.B) {
	dir := b.TempDir()
	for d := range 100 {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", d))
		os.Mkdir(sub, 0o755)
		for f := range 100 {
			os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", f)), []byte("x"), 0o644)
		}
	}
	r, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		if u, err := r.Usage(context.Background(), 100000); err != nil || u.Bytes != 10000 {
			b.Fatalf("usage %+v, %v", u, err)
		}
	}
}
