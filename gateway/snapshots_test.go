package gateway_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/app"
	"github.com/glassroom/glassroom/app/apptest"
	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/snapshots"
)

// The state of a session of every kind, and a fingerprint of each kind
// that the restored session must print alike.
const (
	snapPython = `import numpy as np, pandas as pd, socket
from sklearn.linear_model import LinearRegression
df = pd.DataFrame({"a": [1, 2, 3], "b": [4.0, 5.5, 6.25]})
model = LinearRegression().fit(np.array([[1.0], [2.0], [3.0]]), np.array([2.0, 4.0, 6.5]))
offset = 10
def f(x):
    return x * 2 + len(df) + offset
class Point:
    def __init__(self, x):
        self.x = x
    def norm(self):
        return abs(self.x) + offset
p = Point(-3)
sock = socket.socket()
gen = (i for i in range(3))
open("data.txt", "w").write("the source's")
`
	fpPython = `print(repr((df.to_dict(), model.coef_.round(9).tolist(), round(float(model.intercept_), 9), model.predict([[4.0]]).round(9).tolist(), f(3), p.norm(), isinstance(p, Point), np.__name__, open("data.txt").read())))`
	snapR    = `frame <- data.frame(x = 1:3, y = c("a", "b", "c")); sq <- function(v) v^2 + nrow(frame); con <- file("data.txt"); invisible(0)`
	fpR      = `cat(paste(capture.output(str(frame)), collapse = "|"), sq(4), "\n")`
	snapBash = `greeting="hi there"; declare -a arr=(1 2 "x y"); declare -A map=([k]=v); export EXP=1; hello(){ echo "hello $1"; }; mkdir -p sub && cd sub`
	fpBash   = `echo "$greeting|${arr[*]}|${#arr[@]}|${map[k]}|$EXP|$(hello you)|$PWD"`
)

// TestSnapshotsRestoreAcrossGateways: a session (with an env) holding a DataFrame, a
// fitted model, a function, a class and its instance, modules, an R data
// frame and function, bash variables, an array, a map, a function and
// its directory, and workspace files is snapshotted on one gateway and
// restored on another that shares the snapshot store: every captured
// name prints alike; the socket, the generator and the R connection are
// reported, and JavaScript's variables as not captured. Another key
// sees none of it. Three forks diverge independently of each other and
// of the source, files included, each with the source's env.
func TestSnapshotsRestoreAcrossGateways(t *testing.T) {
	for name, rt := range map[string]runtimeFactory{"local": localRuntime, "docker": dockerRuntime} {
		t.Run(name, func(t *testing.T) {
			shared := t.TempDir()
			a := snapshotEnv(t, rt(t), shared)
			b := snapshotEnv(t, rt(t), shared)
			a.g.NeedKernel(t, "r")
			ca, cb := a.client(keyA), b.client(keyA)
			ctx := context.Background()
			src, err := ca.CreateSession(ctx, glclient.CreateOptions{Env: map[string]string{"FORK_ENV": "the source's"}})
			if err != nil {
				t.Fatal(err)
			}
			run := func(c *glclient.Client, id, lang, code string) string {
				t.Helper()
				x, err := c.Execute(ctx, id, code, glclient.ExecuteOptions{Language: lang})
				if err != nil || x.Status != "ok" {
					t.Fatalf("%s %q: %v %+v", lang, code, err, x)
				}
				return x.Stdout
			}
			run(ca, src.ID, "python", snapPython)
			run(ca, src.ID, "r", snapR)
			run(ca, src.ID, "bash", snapBash)
			run(ca, src.ID, "js", "let jsv = 42")
			want := map[string]string{"python": run(ca, src.ID, "python", fpPython), "r": run(ca, src.ID, "r", fpR), "bash": run(ca, src.ID, "bash", fpBash)}

			if _, err := ca.CreateSnapshot(ctx, src.ID, "no/slashes"); !errors.Is(err, glclient.ErrBadRequest) {
				t.Fatalf("a bad name: %v", err)
			}
			snap, err := ca.CreateSnapshot(ctx, src.ID, "everything")
			if err != nil {
				t.Fatal(err)
			}
			var named struct{ Snapshots []glclient.Snapshot }
			if a.call(keyA, "GET", "/v1/snapshots?name=everything", nil, &named); len(named.Snapshots) != 1 || named.Snapshots[0].ID != snap.ID || named.Snapshots[0].Name != "everything" {
				t.Fatalf("by its name: %+v", named)
			}
			if a.call(keyA, "GET", "/v1/snapshots?name=other", nil, &named); len(named.Snapshots) != 0 {
				t.Fatalf("by another name: %+v", named)
			}
			byLang := map[string]glclient.SnapshotContext{}
			for _, c := range snap.Contexts {
				byLang[c.Language] = c
			}
			wantCaptured := map[string][]string{"python3": {"LinearRegression", "Point", "df", "f", "model", "np", "offset", "p", "pd", "socket"},
				"r": {"frame", "sq"}, "bash": {"EXP", "arr", "greeting", "hello", "map"}, "javascript": {}}
			wantUncaptured := map[string][]string{"python3": {"gen", "sock"}, "r": {"con"}, "bash": {}, "javascript": {"*"}}
			for lang, names := range wantCaptured {
				c := byLang[lang]
				got := slices.Sorted(slices.Values(c.Captured))
				var missing []string
				for _, u := range c.Uncaptured {
					missing = append(missing, u.Name)
				}
				slices.Sort(missing)
				if !slices.Equal(got, names) || !slices.Equal(missing, wantUncaptured[lang]) {
					t.Fatalf("%s: captured %v, uncaptured %+v; want %v and %v", lang, c.Captured, c.Uncaptured, names, wantUncaptured[lang])
				}
			}
			if snap.SizeBytes <= 0 || snap.SessionID != src.ID {
				t.Fatalf("snapshot %+v", snap)
			}

			// Another key: 404 everywhere.
			other := b.client(keyB)
			if _, err := other.GetSnapshot(ctx, snap.ID); !errors.Is(err, glclient.ErrNotFound) {
				t.Fatalf("another key's get: %v", err)
			}
			if _, err := other.CreateSession(ctx, glclient.CreateOptions{Snapshot: snap.ID}); !errors.Is(err, glclient.ErrNotFound) {
				t.Fatalf("another key's restore: %v", err)
			}
			if err := other.DeleteSnapshot(ctx, snap.ID); !errors.Is(err, glclient.ErrNotFound) {
				t.Fatalf("another key's delete: %v", err)
			}
			if list, err := other.ListSnapshots(ctx, ""); err != nil || len(list) != 0 {
				t.Fatalf("another key's list: %v %v", list, err)
			}

			// The other gateway restores it.
			got, err := cb.CreateSession(ctx, glclient.CreateOptions{Snapshot: snap.ID})
			if err != nil {
				t.Fatal(err)
			}
			if got.Restore == nil || got.Restore.Error != "" || len(got.Restore.Contexts) != 4 {
				t.Fatalf("restore %+v", got.Restore)
			}
			for _, c := range got.Restore.Contexts {
				if c.Language == "javascript" {
					if c.Error == "" {
						t.Fatalf("javascript's restore says nothing of its variables: %+v", c)
					}
					continue
				}
				if c.Error != "" || !slices.Equal(slices.Sorted(slices.Values(c.Restored)), wantCaptured[c.Language]) {
					t.Fatalf("%s restored %+v, want %v", c.Language, c, wantCaptured[c.Language])
				}
			}
			for lang, fp := range map[string]string{"python": fpPython, "r": fpR, "bash": fpBash} {
				if out := run(cb, got.ID, lang, fp); out != want[lang] {
					t.Fatalf("%s after the restore:\n%s\nbefore:\n%s", lang, out, want[lang])
				}
			}
			if out := run(cb, got.ID, "js", "console.log(typeof jsv)"); strings.TrimSpace(out) != "undefined" {
				t.Fatalf("javascript: %q", out)
			}
			if ls, err := cb.ListFiles(ctx, got.ID, ""); err != nil || slices.ContainsFunc(ls.Entries, func(e glclient.FileEntry) bool { return strings.HasPrefix(e.Name, ".glassroom") }) {
				t.Fatalf("the restored workspace: %+v %v", ls, err)
			}
			if list, err := cb.ListSnapshots(ctx, src.ID); err != nil || len(list) != 1 || list[0].ID != snap.ID {
				t.Fatalf("list: %+v %v", list, err)
			}

			// Forks diverge.
			forks, err := ca.ForkSession(ctx, src.ID, 3)
			if err != nil || len(forks) != 3 {
				t.Fatalf("fork: %+v %v", forks, err)
			}
			for i, f := range forks {
				if f.Session == nil || f.Session.Restore == nil {
					t.Fatalf("fork %d: %+v", i, f)
				}
				run(ca, f.Session.ID, "python", fmt.Sprintf("offset = %d\nopen('data.txt', 'w').write('fork %d')", i, i))
			}
			for i, f := range forks { // f reads the fork's own offset: a restored function's globals are its kernel's; the env is the source's
				if out := run(ca, f.Session.ID, "python", "import os\nprint(offset, f(0), open('data.txt').read(), os.environ['FORK_ENV'])"); out != fmt.Sprintf("%d %d fork %d the source's\n", i, 3+i, i) {
					t.Fatalf("fork %d: %q", i, out)
				}
			}
			if out := run(ca, src.ID, "python", fpPython); out != want["python"] {
				t.Fatalf("the source changed with its forks: %s", out)
			}
			if list, err := ca.ListSnapshots(ctx, src.ID); err != nil || len(list) != 1 {
				t.Fatalf("a fork's capture is kept: %+v %v", list, err)
			}
			if err := ca.DeleteSnapshot(ctx, snap.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := cb.GetSnapshot(ctx, snap.ID); !errors.Is(err, glclient.ErrNotFound) {
				t.Fatalf("a deleted snapshot: %v", err)
			}
		})
	}
}

// snapshotEnv is a gateway whose snapshot store is shared (a volume
// replicas mount).
func snapshotEnv(t *testing.T, rt app.Runtime, shared string) *env {
	t.Helper()
	g := apptest.Start(t, rt, apptest.Options{Gateway: gateway.Config{APIKeys: []string{keyA, keyB}}, Snapshots: snapshots.Config{Dir: shared}})
	return &env{t: t, g: g, url: g.URL, mgr: g.Manager, rt: g.App.Runtime}
}

// TestForgedSnapshot: a snapshot's archive is the sandbox's writing. One
// whose Python state is a pickle that runs code (as a forger would write
// it) runs that code only in the new session's sandbox: the file it
// writes in the workspace is there, the one it aims at on the host is
// not; the session gets a clear error and a working empty kernel. An
// archive that is not a tar leaves the workspace empty with an error.
func TestForgedSnapshot(t *testing.T) {
	for name, rt := range map[string]runtimeFactory{"local": localRuntime, "docker": dockerRuntime} {
		t.Run(name, func(t *testing.T) {
			shared := t.TempDir()
			e := snapshotEnv(t, rt(t), shared)
			store, err := snapshots.New(snapshots.Config{Dir: shared})
			if err != nil {
				t.Fatal(err)
			}
			host := filepath.Join(shared, "pwned")
			pickle := "cos\nsystem\n(S'touch /home/user/ran-in-the-sandbox " + host + "'\ntR."
			forge := func(archive []byte) string {
				w, err := store.Create(tenantOf(keyA))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write(archive); err != nil {
					t.Fatal(err)
				}
				in, err := w.Commit(snapshots.Info{Session: "forged", Contexts: []snapshots.Context{{Context: "default", Language: "python3", Cwd: "/home/user", Default: true, State: "k0"}}})
				if err != nil {
					t.Fatal(err)
				}
				return in.ID
			}
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, f := range []struct{ name, body string }{{".glassroom-snapshot/k0.state", pickle}, {"note.txt", "forged"}} {
				if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
					t.Fatal(err)
				}
				if _, err := tw.Write([]byte(f.body)); err != nil {
					t.Fatal(err)
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			c := e.client(keyA)
			ctx := context.Background()
			s, err := c.CreateSession(ctx, glclient.CreateOptions{Snapshot: forge(buf.Bytes())})
			if err != nil {
				t.Fatal(err)
			}
			if r := s.Restore; r == nil || r.Error != "" || len(r.Contexts) != 1 || !strings.Contains(r.Contexts[0].Error, "not a glassroom snapshot") {
				t.Fatalf("the forged snapshot's restore: %+v", r)
			}
			if _, err := os.Stat(host); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the forged pickle reached the host: %v", err)
			}
			x := e.exec(keyA, s.ID, "import os\nprint(sorted(os.listdir('.')), [k for k in globals() if not k.startswith('_') and k not in ('In', 'Out', 'exit', 'quit', 'get_ipython', 'os')], 6 * 7)", 60)
			if x.Status != "ok" || strings.TrimSpace(x.Stdout) != "['note.txt', 'ran-in-the-sandbox'] [] 42" {
				t.Fatalf("the session after a forged snapshot: %+v", x)
			}

			s2, err := c.CreateSession(ctx, glclient.CreateOptions{Snapshot: forge([]byte("not a tar file at all, " + strings.Repeat("x", 2000)))})
			if err != nil {
				t.Fatal(err)
			}
			if r := s2.Restore; r == nil || !strings.Contains(r.Error, "workspace could not be restored") || r.Contexts[0].Error == "" {
				t.Fatalf("a corrupt archive's restore: %+v", r)
			}
			if x := e.exec(keyA, s2.ID, "print(6 * 7)", 60); x.Status != "ok" || strings.TrimSpace(x.Stdout) != "42" {
				t.Fatalf("the session after a corrupt snapshot: %+v", x)
			}
		})
	}
}
