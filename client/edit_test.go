package client_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/client"
)

// TestEditFile drives EditFile against a real gateway (local runtime):
// each command, read back by the kernel, and the errors a caller matches.
func TestEditFile(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	c := g.Client(t, apptest.KeyA)
	ctx := ctxT(t, 2*time.Minute)
	s, err := c.CreateSession(ctx, client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ed, err := c.EditFile(ctx, s.ID, "pkg/calc.py", client.EditRequest{Command: client.EditCreate, FileText: api.Ptr("def f(x):\n    return x + 1\n")})
	if err != nil || !ed.Created || ed.Lines != 2 || ed.Path != "pkg/calc.py" {
		t.Fatalf("create: %+v %v", ed, err)
	}
	ed, err = c.EditFile(ctx, s.ID, "/home/user/pkg/calc.py", client.EditRequest{Command: client.EditStrReplace, OldStr: api.Ptr("x + 1"), NewStr: api.Ptr("x * 2")})
	if err != nil || !strings.Contains(ed.Text, "     2\t    return x * 2\n") {
		t.Fatalf("str_replace: %+v %v", ed, err)
	}
	if _, err := c.EditFile(ctx, s.ID, "pkg/calc.py", client.EditRequest{Command: client.EditInsert, InsertLine: api.Ptr(0), NewStr: api.Ptr("# doubles")}); err != nil {
		t.Fatal(err)
	}
	ed, err = c.EditFile(ctx, s.ID, "pkg/calc.py", client.EditRequest{Command: client.EditView, ViewRange: []int{1, 1}})
	if err != nil || ed.Text != "     1\t# doubles\n" || ed.Lines != 3 {
		t.Fatalf("view: %+v %v", ed, err)
	}
	x, err := c.Execute(ctx, s.ID, "import sys; sys.path.insert(0, 'pkg'); import calc; calc.f(21)", client.ExecuteOptions{})
	if err != nil || x.Result.Text("text/plain") != "42" {
		t.Fatalf("the kernel imported the edited module: %+v %v", x, err)
	}

	_, err = c.EditFile(ctx, s.ID, "pkg/calc.py", client.EditRequest{Command: client.EditStrReplace, OldStr: api.Ptr("x"), NewStr: api.Ptr("y")})
	var ae *client.APIError
	if !errors.Is(err, client.ErrConflict) || !errors.As(err, &ae) || ae.Code != "multiple_matches" || !strings.Contains(ae.Message, "2 matches, at lines 2 and 3") {
		t.Fatalf("several matches: %v", err)
	}
	_, err = c.EditFile(ctx, s.ID, "pkg/calc.py", client.EditRequest{Command: client.EditStrReplace, OldStr: api.Ptr("nothing like it")})
	if !errors.Is(err, client.ErrConflict) || !errors.As(err, &ae) || ae.Code != "no_match" {
		t.Fatalf("no match: %v", err)
	}
	if _, err := c.EditFile(ctx, s.ID, "pkg/none.py", client.EditRequest{Command: client.EditView}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := c.EditFile(ctx, s.ID, "pkg/calc.py", client.EditRequest{Command: client.EditInsert, InsertLine: api.Ptr(9), NewStr: api.Ptr("x")}); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("insert_line out of range: %v", err)
	}
	if _, err := c.EditFile(ctx, s.ID, "../etc/passwd", client.EditRequest{Command: client.EditView}); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("traversal: %v", err)
	}
	f, err := c.ReadFile(ctx, s.ID, "pkg/calc.py")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "# doubles\ndef f(x):\n    return x * 2\n" {
		t.Fatalf("after the refused edits: %q %v", b, err)
	}
}
