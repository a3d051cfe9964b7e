package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
)

// TestSnapshotAndForkTools: snapshot_session lists what it captured and
// what it could not; create_session with its snapshot_id starts a
// session with the variables and files; fork_session's copies diverge.
// Against a real gateway and kernel.
func TestSnapshotAndForkTools(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	ctx := ctxT(t, 3*time.Minute)
	cs := connect(t, ctx, httpTransport(g.URL, apptest.KeyA))
	res := call(t, ctx, cs, "execute_python", map[string]any{"code": "x = 41\ngen = (i for i in [])\nopen('note.txt', 'w').write('kept')"})
	sid, _ := res.StructuredContent.(map[string]any)["session_id"].(string)
	res = call(t, ctx, cs, "snapshot_session", map[string]any{"session_id": sid})
	out, _ := res.StructuredContent.(map[string]any)
	snap, _ := out["snapshot_id"].(string)
	if res.IsError || snap == "" || !strings.Contains(textOf(res), "python:x") || !strings.Contains(textOf(res), "python:gen (TypeError") {
		t.Fatalf("snapshot_session: %q %+v", textOf(res), out)
	}
	res = call(t, ctx, cs, "create_session", map[string]any{"snapshot": snap})
	restored, _ := res.StructuredContent.(map[string]any)["session_id"].(string)
	if res.IsError || restored == "" || !strings.Contains(textOf(res), "python: 1 variables restored (x)") {
		t.Fatalf("create_session from the snapshot: %q", textOf(res))
	}
	res = call(t, ctx, cs, "execute_python", map[string]any{"session_id": restored, "code": "print(x + 1, open('note.txt').read())"})
	if !strings.Contains(textOf(res), "42 kept") {
		t.Fatalf("the restored session: %q", textOf(res))
	}
	res = call(t, ctx, cs, "fork_session", map[string]any{"session_id": sid, "count": 2})
	ids, _ := res.StructuredContent.(map[string]any)["session_ids"].([]any)
	if res.IsError || len(ids) != 2 {
		t.Fatalf("fork_session: %q %+v", textOf(res), res.StructuredContent)
	}
	call(t, ctx, cs, "execute_python", map[string]any{"session_id": ids[0], "code": "x = 0"})
	for i, want := range []string{"0", "41"} {
		res = call(t, ctx, cs, "execute_python", map[string]any{"session_id": ids[i], "code": "print(x)"})
		if !strings.Contains(textOf(res), want) {
			t.Fatalf("fork %d: %q, want x = %s", i, textOf(res), want)
		}
	}
}
