package docs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is the import path prefix of the project's packages; the docs
// name packages by the rest (gateway, kernel/runtime/sandbox).
const module = "github.com/glassroom/glassroom/"

// readDoc returns a file of the repository (path from its root).
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// imports returns the project's packages, each with the project packages
// it imports directly (test files left out), from go list, run offline.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOPROXY=off") // no network: the module cache has what the build has
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		var deps []string
		for _, d := range f[1:] {
			if rest, ok := strings.CutPrefix(d, module); ok {
				deps = append(deps, rest)
			}
		}
		pkgs[strings.TrimPrefix(f[0], module)] = deps
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages:\n%s", len(pkgs), out)
	}
	return pkgs
}

type edge struct{ from, to string }

func (e edge) String() string { return e.from + " -> " + e.to }

// diagram parses the Mermaid flowchart under "## Layers" of
// docs/architecture.md: lines "a --> b & c[pkg/path]", where a node is an
// id, optionally labelled with its package path on any one use; an id with
// no label is the package path itself. It returns the drawn packages and
// arrows, in package paths.
func diagram(t *testing.T) (nodes []string, edges []edge) {
	t.Helper()
	doc := readDoc(t, "docs/architecture.md")
	m := regexp.MustCompile("(?s)## Layers\n.*?```mermaid\nflowchart TD\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/architecture.md has no Mermaid flowchart under ## Layers")
	}
	node := regexp.MustCompile(`^([A-Za-z0-9_]+)(?:\[([^\]]+)\])?$`)
	label := map[string]string{}
	parse := func(s string) string {
		n := node.FindStringSubmatch(strings.TrimSpace(s))
		if n == nil {
			t.Fatalf("diagram: %q is not a node (id or id[package])", s)
		}
		if n[2] != "" {
			if old, ok := label[n[1]]; ok && old != n[2] {
				t.Fatalf("diagram: node %s is labelled both %s and %s", n[1], old, n[2])
			}
			label[n[1]] = n[2]
		}
		return n[1]
	}
	var ids []edge
	for _, line := range strings.Split(m[1], "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		from, to, ok := strings.Cut(line, "-->")
		if !ok {
			t.Fatalf("diagram: line %q is not an arrow", line)
		}
		a := parse(from)
		for _, b := range strings.Split(to, "&") {
			ids = append(ids, edge{a, parse(b)})
		}
	}
	pkg := func(id string) string {
		if l, ok := label[id]; ok {
			return l
		}
		return id
	}
	seen := map[string]bool{}
	for _, e := range ids {
		e = edge{pkg(e.from), pkg(e.to)}
		if slices.Contains(edges, e) {
			t.Errorf("diagram: %v is drawn twice", e)
		}
		edges = append(edges, e)
		for _, p := range []string{e.from, e.to} {
			if !seen[p] {
				seen[p] = true
				nodes = append(nodes, p)
			}
		}
	}
	if len(edges) == 0 {
		t.Fatal("diagram: no arrows")
	}
	return nodes, edges
}

// TestArchitectureDiagram: the Layers diagram of docs/architecture.md
// draws every direct import between the packages it shows and nothing
// else: each node is a package of the module, each arrow a direct import
// (go list's Imports, not test imports), and each direct import between
// two drawn packages an arrow.
func TestArchitectureDiagram(t *testing.T) {
	nodes, drawn := diagram(t)
	imported := imports(t)
	for _, n := range nodes {
		if _, ok := imported[n]; !ok {
			t.Errorf("diagram: %s is not a package of the module", n)
		}
	}
	for _, e := range drawn {
		if _, ok := imported[e.from]; ok && !slices.Contains(imported[e.from], e.to) {
			t.Errorf("diagram draws %v, but %s does not import %s", e, e.from, e.to)
		}
	}
	for _, from := range nodes {
		for _, to := range imported[from] {
			if slices.Contains(nodes, to) && !slices.Contains(drawn, edge{from, to}) {
				t.Errorf("%s imports %s, but the diagram has no such arrow", from, to)
			}
		}
	}
}

// TestArchitectureLayers: the layers table under "## Layers" is in order,
// top first: no package named in a row imports one named in a row above
// it. Names with "…" (gateway/internal/…) stand for several and are
// skipped.
func TestArchitectureLayers(t *testing.T) {
	doc := readDoc(t, "docs/architecture.md")
	m := regexp.MustCompile("(?s)## Layers\n.*?\n(\\| layer \\| packages \\|.*?)\n\n").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/architecture.md has no layers table under ## Layers")
	}
	imported := imports(t)
	row := map[string]int{}
	name := map[int]string{}
	for i, line := range strings.Split(m[1], "\n")[2:] {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("layers table: row %q", line)
		}
		name[i] = strings.TrimSpace(cells[1])
		for _, p := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[2], -1) {
			if strings.Contains(p[1], "…") {
				continue
			}
			if _, ok := imported[p[1]]; !ok {
				t.Errorf("layers table: %s (layer %s) is not a package of the module", p[1], name[i])
			}
			row[p[1]] = i
		}
	}
	if len(row) < 5 {
		t.Fatalf("layers table: only %d packages found", len(row))
	}
	for from, r := range row {
		for _, to := range imported[from] {
			if rt, ok := row[to]; ok && rt < r {
				t.Errorf("%s (layer %s) imports %s, a layer above it (%s)", from, name[r], to, name[rt])
			}
		}
	}
}

// TestGatewayReachesKernelsThroughSessions: the HTTP face (gateway,
// gateway/jupyter) imports nothing of the kernel protocol or the
// sandboxes: it reaches kernels through sessions only. (kernel/kernels,
// the registry of kernel definitions, is data every layer reads.)
func TestGatewayReachesKernelsThroughSessions(t *testing.T) {
	imported := imports(t)
	for _, from := range []string{"gateway", "gateway/jupyter"} {
		if _, ok := imported[from]; !ok {
			t.Fatalf("go list: no package %s", from)
		}
		for _, to := range imported[from] {
			if to == "kernel" || strings.HasPrefix(to, "kernel/runtime") {
				t.Errorf("%s imports %s: the gateway reaches kernels through sessions", from, to)
			}
		}
	}
}

// maxReadmeLines is how long the README may grow: it is the front door
// (what glassroom is, the two commands, one example per client, where to
// read on); detail belongs in docs/.
const maxReadmeLines = 250

// TestReadmeIsAFrontDoor: the README stays short, its two commands are the
// Makefile's targets and the test command is the one CI runs.
func TestReadmeIsAFrontDoor(t *testing.T) {
	readme := readDoc(t, "README.md")
	if n := strings.Count(readme, "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move detail to docs/ and link it", n, maxReadmeLines)
	}
	first := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme)
	if first == nil {
		t.Fatal("README.md has no sh block")
	}
	makefile := readDoc(t, "Makefile")
	for _, target := range []string{"run", "test"} {
		if !regexp.MustCompile(`(?m)^make ` + target + `\b`).MatchString(first[1]) {
			t.Errorf("README.md's first block does not give `make %s`", target)
		}
		if !regexp.MustCompile(`(?m)^` + target + `:`).MatchString(makefile) {
			t.Errorf("the Makefile has no %s target, which the README gives", target)
		}
	}
	if !regexp.MustCompile(`(?m)^make test$`).MatchString(readDoc(t, ".ci/run")) {
		t.Error(".ci/run does not run `make test`, the README's test command")
	}
}

// anchors returns the GitHub anchors of a Markdown file's headings.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	inCode := false
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		h, ok := strings.CutPrefix(line, "#")
		if inCode || !ok {
			continue
		}
		h = strings.TrimSpace(strings.TrimLeft(h, "#"))
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		for i := 0; ; i++ { // GitHub numbers repeated headings
			k := a
			if i > 0 {
				k = fmt.Sprintf("%s-%d", a, i)
			}
			if !out[k] {
				out[k] = true
				break
			}
		}
	}
	return out
}

// TestFrontDoorLinks: every relative link of the README and of
// docs/kubernetes.md (which holds what the README moved out) names a file
// of the repository and, with #anchor, a heading of that Markdown file.
func TestFrontDoorLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range []string{"README.md", "docs/kubernetes.md"} {
		text := readDoc(t, doc)
		n := 0
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(filepath.Dir(doc), file)
			if file == "" {
				path = doc
			}
			b, err := os.ReadFile(filepath.Join("..", path))
			if err != nil {
				if _, serr := os.Stat(filepath.Join("..", path)); serr != nil {
					t.Errorf("%s links %s: %v", doc, target, serr)
				}
				continue
			}
			if anchor != "" && !anchors(string(b))[anchor] {
				t.Errorf("%s links %s: %s has no heading #%s", doc, target, path, anchor)
			}
		}
		if n == 0 {
			t.Errorf("%s has no relative links", doc)
		}
	}
}
