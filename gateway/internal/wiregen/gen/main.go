// Command gen writes the files package wiregen generates (see there);
// run by `go generate ./gateway/` and `make generate`.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/glassroom/glassroom/gateway/internal/wiregen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := wiregen.Root(wd)
	if err != nil {
		return err
	}
	files, err := wiregen.Files(root)
	if err != nil {
		return err
	}
	for path, data := range files {
		if err := os.WriteFile(filepath.Join(root, path), data, 0o644); err != nil {
			return fmt.Errorf("gen: %w", err)
		}
	}
	return nil
}
