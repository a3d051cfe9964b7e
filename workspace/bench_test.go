package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/glassroom/glassroom/workspace"
)

// BenchmarkChangesIn10kFileWorkspace measures the per-execution cost of
// change tracking (Reset + one write + Changes) in a workspace that holds
// 10,000 files in 100 directories: it must not grow with the workspace.
func BenchmarkChangesIn10kFileWorkspace(b *testing.B) {
	dir := b.TempDir()
	for d := 0; d < 100; d++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", d))
		os.Mkdir(sub, 0o755)
		for f := 0; f < 100; f++ {
			os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", f)), []byte("x"), 0o644)
		}
	}
	r, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	w, err := workspace.NewWatcher(r, 256, 1000)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	target := filepath.Join(dir, "d050", "f050.txt")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Reset()
		os.WriteFile(target, []byte("changed"), 0o644)
		got, _ := w.Changes()
		if len(got) != 1 {
			b.Fatalf("changes: %+v", got)
		}
	}
}
