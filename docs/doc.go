// Package docs holds glassroom's documentation, the Markdown files beside
// this one, and no code. Its tests keep statements of the documentation
// true against the code: the architecture diagram's arrows against the
// real imports (go list), the layers table's order, the README's length
// and its links, and the README's commands against the Makefile and CI;
// and the house rules of the packages changed most often (house_test.go:
// no type over 30 methods, no file over 600 lines, one stream merge).
// They are fast (no Docker, no network) and run in go test -short.
package docs
