package wiregen_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/glassroom/glassroom/gateway/internal/wiregen"
)

// TestGeneratedFilesAreCurrent regenerates the OpenAPI schemas and the
// TypeScript declarations from package api in memory and compares them
// with the committed files: a wire type changed without `make generate`
// fails here.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, err := wiregen.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := wiregen.Files(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("%d files generated", len(files))
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what package api generates: run `make generate`", path)
		}
	}
}

// TestGeneratorIsStable: generating from the generated document gives
// it back (the paths and hand-written schemas are kept as they are).
func TestGeneratorIsStable(t *testing.T) {
	root, err := wiregen.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := wiregen.Files(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"api", "gateway"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, wiregen.OpenAPIFile), files[wiregen.OpenAPIFile], 0o644); err != nil {
		t.Fatal(err)
	}
	srcs, _ := filepath.Glob(filepath.Join(root, "api", "*.go"))
	for _, s := range srcs {
		data, _ := os.ReadFile(s)
		if err := os.WriteFile(filepath.Join(dir, "api", filepath.Base(s)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	again, err := wiregen.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again[wiregen.OpenAPIFile], files[wiregen.OpenAPIFile]) {
		t.Error("regenerating the generated document changes it")
	}
}
