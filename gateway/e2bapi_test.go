package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app"
	"github.com/glassroom/glassroom/app/apptest"
	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// The gateway side of E2B's SDK semantics (issue 25): templates, metadata,
// lifetimes, metrics, a client's pause and resume, moving and watching
// files. Their uid bases are their own: CI may run the other suites at
// the same time.

func e2bLocal(t *testing.T) app.Runtime  { return apptest.Local(t) }
func e2bDocker(t *testing.T) app.Runtime { return apptest.DockerWith(t, "runc") }

func e2bRuntimes() map[string]runtimeFactory {
	return map[string]runtimeFactory{"local": e2bLocal, "docker": e2bDocker}
}

// apiStatus is the HTTP status and code of a client error, or 0.
func apiStatus(err error) (int, string) {
	var ae *glclient.APIError
	if errors.As(err, &ae) {
		return ae.Status, ae.Code
	}
	return 0, ""
}

// TestTemplatesApply: an operator's template sets the language, limits,
// network and env of the sessions made from it; request fields override
// it; GET /v1/templates lists it with the built-ins; an unknown template
// is a 400.
func TestTemplatesApply(t *testing.T) {
	cfg := egressConfig(t, nil, "*.test")
	cfg.Templates = map[string]sessions.Template{
		"small": {Description: "a small sandbox", Language: "python3", Limits: sessions.Limits{MemoryMB: 600, Pids: 200, WorkspaceMB: 64},
			Network: sessions.Network{Allow: []string{"api.test"}}, IdleTimeout: 90 * time.Second, Env: map[string]string{"FROM_TEMPLATE": "yes"}},
	}
	e := newEnv(t, e2bLocal(t), cfg)
	c := e.client(keyA)
	ctx := context.Background()

	ts, err := c.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]glclient.Template{}
	for _, tm := range ts {
		names[tm.Name] = tm
	}
	if _, ok := names["default"]; !ok {
		t.Errorf("no default template: %+v", ts)
	}
	if _, ok := names["code-interpreter-v1"]; !ok {
		t.Errorf("no code-interpreter-v1 template: %+v", ts)
	}
	if s := names["small"]; s.Limits.MemoryMB != 600 || len(s.Network.Allow) != 1 || s.IdleTimeoutS != 90 {
		t.Errorf("the small template is listed as %+v", s)
	}

	s, err := c.CreateSession(ctx, glclient.CreateOptions{Template: "small"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Template != "small" || s.Limits.MemoryMB != 600 || s.Limits.Pids != 200 || s.Language != "python3" ||
		s.Network == nil || len(s.Network.Allow) != 1 || s.Network.Allow[0] != "api.test" || s.IdleTimeoutS != 90 {
		t.Errorf("a session of the small template: %+v", s)
	}
	// Inside: the template's env, the memory limit of its cgroup, its
	// proxy.
	x := e.exec(keyA, s.ID, `import os; print(os.environ.get("FROM_TEMPLATE"), bool(os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy")))`, 60)
	if strings.TrimSpace(x.Stdout) != "yes True" {
		t.Errorf("inside the template's session: %+v", x)
	}
	// Request fields override the template's.
	s2, err := c.CreateSession(ctx, glclient.CreateOptions{Template: "small", Limits: glclient.Limits{MemoryMB: 700}})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Limits.MemoryMB != 700 || s2.Limits.Pids != 200 {
		t.Errorf("overriding the template's memory: %+v", s2.Limits)
	}
	// A session without a template is the default one's, with no network.
	s3, err := c.CreateSession(ctx, glclient.CreateOptions{Template: "code-interpreter-v1"})
	if err != nil {
		t.Fatal(err)
	}
	if s3.Template != "code-interpreter-v1" || s3.Network != nil || s3.Language != "python3" {
		t.Errorf("a code-interpreter-v1 session: %+v", s3)
	}
	if _, err := c.CreateSession(ctx, glclient.CreateOptions{Template: "nope"}); !strings.Contains(fmt.Sprint(err), "unknown template") {
		t.Errorf("an unknown template: %v", err)
	} else if st, _ := apiStatus(err); st != 400 {
		t.Errorf("an unknown template: status %d", st)
	}
}

// TestMetadataFilterAndPages: metadata comes back as given, filters the
// list (all pairs must match), and the list pages by limit and
// next_token, oldest first (or newest first), each session once; the
// template and creation-time filters hold; bad metadata is a 400.
func TestMetadataFilterAndPages(t *testing.T) {
	e := newEnv(t, e2bLocal(t), sessions.Config{})
	c := e.client(keyA)
	ctx := context.Background()
	var ids []string
	for i, md := range []map[string]string{{"team": "a", "i": "0"}, {"team": "a", "i": "1"}, {"team": "b"}, {"team": "a", "i": "3"}} {
		s, err := c.CreateSession(ctx, glclient.CreateOptions{Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Metadata) != len(md) || s.Metadata["team"] != md["team"] {
			t.Errorf("session %d's metadata: %v, want %v", i, s.Metadata, md)
		}
		ids = append(ids, s.ID)
	}
	got, err := c.GetSession(ctx, ids[1])
	if err != nil || got.Metadata["i"] != "1" || got.Metadata["team"] != "a" {
		t.Fatalf("GET: %+v %v", got, err)
	}
	page, next, err := c.ListSessionsPage(ctx, glclient.ListQuery{Metadata: map[string]string{"team": "a"}})
	if err != nil || len(page) != 3 || next != "" {
		t.Fatalf("team=a: %d sessions, next %q, %v", len(page), next, err)
	}
	page, _, err = c.ListSessionsPage(ctx, glclient.ListQuery{Metadata: map[string]string{"team": "a", "i": "1"}})
	if err != nil || len(page) != 1 || page[0].ID != ids[1] {
		t.Fatalf("team=a, i=1: %+v %v", page, err)
	}
	// Pages of one, in creation order, then newest first.
	reversed := slices.Clone(ids)
	slices.Reverse(reversed)
	for _, order := range []struct {
		newest bool
		want   []string
	}{{false, ids}, {true, reversed}} {
		if seen := pageOfOne(t, c, glclient.ListQuery{Newest: order.newest}); strings.Join(seen, ",") != strings.Join(order.want, ",") {
			t.Errorf("paged (newest first: %v): %v, want %v", order.newest, seen, order.want)
		}
	}
	third, err := c.GetSession(ctx, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if seen := pageOfOne(t, c, glclient.ListQuery{After: third.CreatedAt, Template: third.Template}); strings.Join(seen, ",") != strings.Join(ids[2:], ",") {
		t.Errorf("started after the third, of its template: %v, want %v", seen, ids[2:])
	}
	if seen := pageOfOne(t, c, glclient.ListQuery{Before: third.CreatedAt.Add(-time.Nanosecond)}); strings.Join(seen, ",") != strings.Join(ids[:2], ",") {
		t.Errorf("started before the third: %v, want %v", seen, ids[:2])
	}
	if seen := pageOfOne(t, c, glclient.ListQuery{Template: "no-such-template"}); len(seen) != 0 {
		t.Errorf("another template lists %v", seen)
	}
	// Another key sees none of them.
	if page, _, err := e.client(keyB).ListSessionsPage(ctx, glclient.ListQuery{Metadata: map[string]string{"team": "a"}}); err != nil || len(page) != 0 {
		t.Errorf("key B lists %d of key A's sessions (%v)", len(page), err)
	}
	big := map[string]string{}
	for i := 0; i < 65; i++ {
		big["k"+strconv.Itoa(i)] = "v"
	}
	for name, md := range map[string]map[string]string{"65 keys": big, "a long value": {"k": strings.Repeat("v", 513)}, "an empty key": {"": "v"}} {
		if _, err := c.CreateSession(ctx, glclient.CreateOptions{Metadata: md}); err == nil {
			t.Errorf("metadata with %s was accepted", name)
		} else if st, _ := apiStatus(err); st != 400 {
			t.Errorf("metadata with %s: %v", name, err)
		}
	}
	for _, q := range []string{"limit=0", "limit=101", "next_token=%21", "state=gone", "order=up", "started_after=yesterday"} {
		if st := e.call(keyA, "GET", "/v1/sessions?"+q, nil, nil); st != 400 {
			t.Errorf("GET /v1/sessions?%s: %d", q, st)
		}
	}
}

// pageOfOne lists q's sessions a page of one at a time, following the
// next tokens, and returns their ids.
func pageOfOne(t *testing.T, c *glclient.Client, q glclient.ListQuery) []string {
	t.Helper()
	var seen []string
	q.Limit = 1
	for n := 0; ; n++ {
		if n > 10 {
			t.Fatal("paging does not end")
		}
		page, next, err := c.ListSessionsPage(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			seen = append(seen, s.ID)
		}
		if next == "" {
			return seen
		}
		if len(page) != 1 {
			t.Fatalf("a page of %d with a next token", len(page))
		}
		q.NextToken = next
	}
}

// waitGone waits until the session is deleted (404).
func waitGone(t *testing.T, c *glclient.Client, id string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := c.GetSession(context.Background(), id)
		if errors.Is(err, glclient.ErrNotFound) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s never ended", id)
		}
	}
}

// TestLifetimeEndsSessions: a session created with lifetime_s ends when
// it runs out, however busy its clients keep it; PATCH lifetime_s moves
// the end (E2B's set_timeout); a lifetime past --max-lifetime is a 400.
func TestLifetimeEndsSessions(t *testing.T) {
	e := newEnv(t, e2bLocal(t), sessions.Config{ReapInterval: 50 * time.Millisecond, MaxLifetime: time.Hour})
	c := e.client(keyA)
	ctx := context.Background()
	s, err := c.CreateSession(ctx, glclient.CreateOptions{Lifetime: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.EndAt.Sub(s.CreatedAt); d < 1900*time.Millisecond || d > 2100*time.Millisecond {
		t.Errorf("end_at is %v after creation, want 2s", d)
	}
	if !s.ExpiresAt.Equal(s.EndAt) {
		t.Errorf("expires_at %v, end_at %v", s.ExpiresAt, s.EndAt)
	}
	waitGone(t, c, s.ID)

	long, err := c.CreateSession(ctx, glclient.CreateOptions{Lifetime: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetLifetime(ctx, long.ID, 2*time.Hour); err == nil {
		t.Error("a lifetime past --max-lifetime was accepted")
	} else if st, _ := apiStatus(err); st != 400 {
		t.Errorf("a lifetime past --max-lifetime: %v", err)
	}
	moved, err := c.SetLifetime(ctx, long.ID, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !moved.EndAt.Before(long.EndAt) || moved.EndAt.After(time.Now().Add(2*time.Second)) {
		t.Errorf("end_at moved from %v to %v", long.EndAt, moved.EndAt)
	}
	waitGone(t, c, long.ID)
	if _, err := c.CreateSession(ctx, glclient.CreateOptions{Lifetime: 2 * time.Hour}); err == nil {
		t.Error("a session with a lifetime past --max-lifetime was created")
	}
}

// TestSessionMetrics: memory use grows when the kernel holds more, CPU
// use when it spins, disk use when a file is written; the totals are the
// session's limits.
func TestSessionMetrics(t *testing.T) {
	for name, rt := range e2bRuntimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			c := e.client(keyA)
			ctx := context.Background()
			s, err := c.CreateSession(ctx, glclient.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			before, err := c.SessionMetrics(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if before.MemTotal != int64(s.Limits.MemoryMB)<<20 || before.DiskTotal != int64(s.Limits.WorkspaceMB)<<20 || before.CPUCount < 1 || before.MemUsed <= 0 {
				t.Fatalf("metrics %+v of a session with limits %+v", before, s.Limits)
			}
			if x := e.exec(keyA, s.ID, "held = b'x' * (300 << 20)\nopen('blob.bin', 'wb').write(b'y' * (8 << 20))", 60); x.Status != "ok" {
				t.Fatalf("%+v", x)
			}
			after, err := c.SessionMetrics(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if after.MemUsed < before.MemUsed+200<<20 {
				t.Errorf("memory use went from %d to %d while the kernel took 300 MiB", before.MemUsed, after.MemUsed)
			}
			if after.DiskUsed < before.DiskUsed+6<<20 {
				t.Errorf("disk use went from %d to %d after an 8 MiB file", before.DiskUsed, after.DiskUsed)
			}
			// CPU: an idle kernel uses less than one that spins.
			spinKernel(t, c, s.ID)
			for deadline := time.Now().Add(60 * time.Second); ; {
				busy, err := c.SessionMetrics(ctx, s.ID)
				if err != nil {
					t.Fatal(err)
				}
				if busy.CPUUsedPct > after.CPUUsedPct+20 {
					t.Logf("metrics: before %+v, holding 300 MiB %+v, spinning %+v", before, after, busy)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("cpu_used_pct stayed at %v (idle: %v) while the kernel spins", busy.CPUUsedPct, after.CPUUsedPct)
				}
			}
		})
	}
}

// TestSessionMetricsHistory: the sampler keeps a session's samples in
// time order, each within the range asked for; CPU use measured between
// two samples shows a kernel that spins; a range before the session has
// none; bad ranges are 400 and another tenant's session 404.
func TestSessionMetricsHistory(t *testing.T) {
	e := newEnv(t, e2bLocal(t), sessions.Config{MetricsInterval: 100 * time.Millisecond})
	c := e.client(keyA)
	ctx := context.Background()
	created := time.Now()
	s, err := c.CreateSession(ctx, glclient.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// An end in the past: the gateway takes no sample of now, so what
	// comes back is the sampler's.
	var got []glclient.Metrics
	testkit.Eventually(t, time.Minute, func() bool {
		got, err = c.SessionMetricsHistory(ctx, s.ID, created, time.Now().Add(-time.Millisecond))
		return err == nil && len(got) >= 3
	}, "three samples of the sampler")
	for i, m := range got {
		if m.Timestamp.Before(created) || m.CPUCount < 1 || m.MemTotal != int64(s.Limits.MemoryMB)<<20 || m.MemUsed <= 0 || m.DiskTotal != int64(s.Limits.WorkspaceMB)<<20 ||
			i > 0 && m.Timestamp.Before(got[i-1].Timestamp) {
			t.Fatalf("sample %d of %+v", i, got)
		}
	}
	spinKernel(t, c, s.ID)
	spinning := time.Now()
	testkit.Eventually(t, time.Minute, func() bool {
		got, err = c.SessionMetricsHistory(ctx, s.ID, spinning, time.Now().Add(-time.Millisecond))
		return err == nil && slices.ContainsFunc(got, func(m glclient.Metrics) bool { return m.CPUUsedPct > 50 })
	}, "a sample of the spinning kernel over 50% of a CPU")
	if now, err := c.SessionMetricsHistory(ctx, s.ID, time.Time{}, time.Time{}); err != nil || len(now) == 0 || time.Since(now[len(now)-1].Timestamp) > 30*time.Second {
		t.Fatalf("the whole history ends with a sample of now: %v %v", err, now)
	}
	if before, err := c.SessionMetricsHistory(ctx, s.ID, created.Add(-time.Hour), created.Add(-30*time.Minute)); err != nil || len(before) != 0 {
		t.Fatalf("samples from before the session: %v %+v", err, before)
	}
	for _, q := range []string{"start=yesterday", "end=2026-13-01T00:00:00Z", "start=2026-01-02T00:00:00Z&end=2026-01-01T00:00:00Z"} {
		var out map[string]any
		if st := e.g.Call(t, "Bearer "+keyA, "GET", "/v1/sessions/"+s.ID+"/metrics/history?"+q, nil, &out); st != http.StatusBadRequest {
			t.Errorf("%s: %d %v", q, st, out)
		}
	}
	if _, err := e.client(keyB).SessionMetricsHistory(ctx, s.ID, time.Time{}, time.Time{}); !errors.Is(err, glclient.ErrNotFound) {
		t.Fatalf("another tenant's session: %v", err)
	}
}

// TestClientPauseFreezes: a client's pause freezes the sandbox, a running
// thread included (measured inside the kernel after resume: its counter
// stood still for at least the whole pause); meanwhile executions and
// commands answer 409 session_paused, GET, the list's state=paused and
// metrics still answer; resume thaws it, variables intact.
func TestClientPauseFreezes(t *testing.T) {
	for name, rt := range e2bRuntimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			c := e.client(keyA)
			ctx := context.Background()
			s := e.create(keyA, nil)
			x := e.exec(keyA, s.ID, `import threading, time
n = 0
gap = 0.0
def count():
    global n, gap
    last = time.monotonic()
    while True:
        n += 1
        now = time.monotonic()
        gap = max(gap, now - last)
        last = now
threading.Thread(target=count, daemon=True).start()
time.sleep(0.2)`, 60)
			if x.Status != "ok" {
				t.Fatalf("%+v", x)
			}
			p, err := c.PauseSession(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			pausedAt := time.Now()
			if !p.Paused || !p.PausedByClient {
				t.Errorf("pause answered %+v", p)
			}
			if _, err := c.Execute(ctx, s.ID, "n", glclient.ExecuteOptions{}); !glclient.IsPaused(err) {
				t.Errorf("an execution on a paused session: %v", err)
			} else if st, _ := apiStatus(err); st != 409 {
				t.Errorf("an execution on a paused session: %v", err)
			}
			if _, err := c.RunCommand(ctx, s.ID, "true", glclient.CommandOptions{}); !glclient.IsPaused(err) {
				t.Errorf("a command on a paused session: %v", err)
			}
			if got, err := c.GetSession(ctx, s.ID); err != nil || !got.Paused || !got.PausedByClient {
				t.Errorf("GET a paused session: %+v %v", got, err)
			}
			if page, _, err := c.ListSessionsPage(ctx, glclient.ListQuery{State: []string{"paused"}}); err != nil || len(page) != 1 || page[0].ID != s.ID {
				t.Errorf("state=paused: %+v %v", page, err)
			}
			if page, _, err := c.ListSessionsPage(ctx, glclient.ListQuery{State: []string{"running"}}); err != nil || len(page) != 0 {
				t.Errorf("state=running lists a paused session: %+v %v", page, err)
			}
			if m, err := c.SessionMetrics(ctx, s.ID); err != nil || m.MemUsed <= 0 {
				t.Errorf("metrics of a paused session: %+v %v", m, err)
			}
			time.Sleep(time.Second) // the pause must outlast the thread's usual gaps by far
			held := time.Since(pausedAt)
			r, err := c.ResumeSession(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Paused {
				t.Errorf("resume answered %+v", r)
			}
			x = e.exec(keyA, s.ID, "time.sleep(0.2); print(n, gap)", 60)
			var n int
			var gap float64
			if _, err := fmt.Sscan(x.Stdout, &n, &gap); err != nil || x.Status != "ok" {
				t.Fatalf("after resume: %+v", x)
			}
			if gap < held.Seconds() {
				t.Errorf("the counting thread's longest stall was %.3fs; the session was paused for %.3fs: it ran on while paused", gap, held.Seconds())
			}
			// It counts on: within 10 s (on a loaded machine the thread may
			// not get the CPU, or the GIL, between two quick cells).
			x2 := e.exec(keyA, s.ID, fmt.Sprintf("t0 = time.monotonic()\nwhile n == %d and time.monotonic() - t0 < 10:\n    time.sleep(0.01)\nprint(n)", n), 60)
			var n2 int
			if _, err := fmt.Sscan(x2.Stdout, &n2); err != nil || n2 <= n {
				t.Errorf("the thread does not count after resume: %d then %q", n, x2.Stdout)
			}
		})
	}
}

// TestFilesMoveAndWatch: files-move renames (never replacing: 409; a
// missing source: 404); files-watch sees the file a cell creates, and
// recursive watches see subdirectories.
func TestFilesMoveAndWatch(t *testing.T) {
	e := newEnv(t, e2bLocal(t), sessions.Config{})
	c := e.client(keyA)
	ctx := context.Background()
	s := e.create(keyA, nil)
	if _, err := c.WriteFile(ctx, s.ID, "a.txt", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteFile(ctx, s.ID, "taken.txt", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	fi, err := c.MoveFile(ctx, s.ID, "a.txt", "sub/b.txt")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Path != "sub/b.txt" || fi.Size != 5 {
		t.Errorf("moved: %+v", fi)
	}
	f, err := c.ReadFile(ctx, s.ID, "sub/b.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "hello" {
		t.Errorf("the moved file holds %q", b)
	}
	if ok, _ := c.FileExists(ctx, s.ID, "a.txt"); ok {
		t.Error("the old name still exists")
	}
	if _, err := c.MoveFile(ctx, s.ID, "sub/b.txt", "taken.txt"); !errors.Is(err, glclient.ErrConflict) {
		t.Errorf("moving onto an existing file: %v", err)
	}
	if _, err := c.MoveFile(ctx, s.ID, "nope.txt", "x.txt"); !errors.Is(err, glclient.ErrNotFound) {
		t.Errorf("moving a missing file: %v", err)
	}
	if _, err := c.MoveFile(ctx, s.ID, "sub/b.txt", "../out.txt"); !errors.Is(err, glclient.ErrBadRequest) {
		t.Errorf("moving out of the workspace: %v", err)
	}

	w, err := c.WatchDir(ctx, s.ID, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if x := e.exec(keyA, s.ID, "open('made.txt', 'w').write('x')\nopen('sub/deep.txt', 'w').write('y')", 60); x.Status != "ok" {
		t.Fatalf("%+v", x)
	}
	want := map[string]bool{"create made.txt": false, "create sub/deep.txt": false, "write made.txt": false}
	timeout := time.After(60 * time.Second)
	for missing := len(want); missing > 0; {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("the watch ended; still missing %v", want)
			}
			if seen, tracked := want[ev.Type+" "+ev.Name]; tracked && !seen {
				want[ev.Type+" "+ev.Name] = true
				missing--
			}
		case <-timeout:
			t.Fatalf("events missing: %v", want)
		}
	}
	// A files-API write (a temporary file renamed into place) shows as
	// the file's create, chmod and write, in that order, as E2B's
	// in-place write of a new file does; with entries, each describes it.
	we, err := c.WatchDirWith(ctx, s.ID, "sub", glclient.WatchOptions{Entry: true})
	if err != nil {
		t.Fatal(err)
	}
	defer we.Close()
	if _, err := c.WriteFile(ctx, s.ID, "sub/put.txt", strings.NewReader("put"), 3); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"create", "chmod", "write"} {
		ev := <-we.Events()
		if ev.Type != want || ev.Name != "put.txt" || ev.Entry == nil || ev.Entry.Path != "sub/put.txt" || ev.Entry.Size != 3 || ev.Entry.Type != "file" {
			t.Fatalf("event %+v (entry %+v), want %s put.txt with its entry", ev, ev.Entry, want)
		}
	}
	// A sync is a barrier: once it is answered, the events of a write
	// made before it are on Events already.
	for i := range 3 {
		name := fmt.Sprintf("sync%d.txt", i)
		if _, err := c.WriteFile(ctx, s.ID, "sub/"+name, strings.NewReader("s"), 1); err != nil {
			t.Fatal(err)
		}
		if err := we.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"create", "chmod", "write"} {
			select {
			case ev := <-we.Events():
				if ev.Type != want || ev.Name != name {
					t.Fatalf("after sync %d: event %+v, want %s %s", i, ev, want, name)
				}
			default:
				t.Fatalf("after sync %d: no %s event of %s yet", i, want, name)
			}
		}
	}
	if _, err := c.WatchDir(ctx, s.ID, "sub/b.txt", false); !errors.Is(err, glclient.ErrBadRequest) {
		t.Errorf("watching a file: %v", err)
	}
	// The watch ends with the session.
	if err := c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	for range w.Events() {
	}
}

// spinKernel runs a busy loop in the session's kernel until the test
// ends: a cleanup interrupts it and waits for the execution to return.
func spinKernel(t *testing.T, c *glclient.Client, id string) {
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Execute(ctx, id, "while True: pass", glclient.ExecuteOptions{Timeout: 2 * time.Minute})
	}()
	t.Cleanup(func() {
		_ = c.Interrupt(ctx, id)
		<-done
	})
}
