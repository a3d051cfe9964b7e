package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// houseDirs are the packages the house rules below hold for: the ones
// changed most often, where a type or a file that grows without bound
// slows every change.
var houseDirs = []string{"sessions", "gateway", "gateway/jupyter", "kernel"}

// Bounds of the house rules (docs/architecture.md, "Development").
const (
	maxMethodsPerType = 30
	maxFileLines      = 600
)

// parseDir parses the Go files of dir (relative to the module's root);
// tests says whether _test.go files are included.
func parseDir(t *testing.T, dir string, tests bool) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	paths, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	for _, p := range paths {
		if !tests && strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", p, err)
		}
		files[p] = f
	}
	return fset, files
}

// receiverType is the name of a method's receiver type.
func receiverType(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	e := fd.Recv.List[0].Type
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// TestNoTypeOver30Methods: no type of the house packages has more than
// maxMethodsPerType methods (a type that does everything is a type
// nobody can change safely: split it by responsibility).
func TestNoTypeOver30Methods(t *testing.T) {
	for _, dir := range houseDirs {
		_, files := parseDir(t, dir, false)
		count := map[string]int{}
		for _, f := range files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok {
					if r := receiverType(fd); r != "" {
						count[r]++
					}
				}
			}
		}
		if len(count) == 0 {
			t.Fatalf("%s: no methods found", dir)
		}
		var over []string
		for typ, n := range count {
			if n > maxMethodsPerType {
				over = append(over, typ)
			}
		}
		sort.Strings(over)
		for _, typ := range over {
			t.Errorf("%s.%s has %d methods (at most %d)", dir, typ, count[typ], maxMethodsPerType)
		}
	}
}

// TestNoFileOver600Lines: no Go file of the house packages, tests
// included, is longer than maxFileLines.
func TestNoFileOver600Lines(t *testing.T) {
	for _, dir := range houseDirs {
		paths, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), "\n"); n > maxFileLines {
				t.Errorf("%s has %d lines (at most %d): split it by subject", strings.TrimPrefix(p, "../"), n, maxFileLines)
			}
		}
	}
}

// TestOneStreamMerge: the faces write a session's events and side
// messages through sessions.Stream, the one merge of the two: no gateway
// code subscribes to either on its own.
func TestOneStreamMerge(t *testing.T) {
	for _, dir := range []string{"gateway", "gateway/jupyter"} {
		fset, files := parseDir(t, dir, false)
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if ok && (sel.Sel.Name == "Subscribe" || sel.Sel.Name == "SubscribeKernel") {
					t.Errorf("%s: %s merges the event log or the side stream itself: range over Session.Stream",
						strings.TrimPrefix(fset.Position(sel.Pos()).String(), "../"), sel.Sel.Name)
				}
				return true
			})
		}
	}
}
