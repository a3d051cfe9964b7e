package web

import (
	"embed"
	"io/fs"
)

// static holds the UI files; it is never modified.
//
//go:embed static
var static embed.FS

// Assets returns the UI files rooted at the static directory, so that
// "index.html", "style.css" and the js/ folder are at the top level.
func Assets() (fs.FS, error) {
	return fs.Sub(static, "static")
}
