package sessions_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessionstore"
	"github.com/rs/zerolog"
)

// TestJupyterSessionsKeptInTheStore: a session's Jupyter sessions are
// checked, returned as set, written to its store record at once (what a
// restarted gateway restores them from) and go with the session.
func TestJupyterSessionsKeptInTheStore(t *testing.T) {
	st, err := sessionstore.Open(sessionstore.Config{Dir: t.TempDir()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := newManager(t, sessions.Config{Store: st})
	s := create(t, m, "tenant-a")
	if got := s.JupyterSessions(); len(got) != 0 {
		t.Fatalf("a new session's Jupyter sessions: %+v", got)
	}
	list := []sessions.JupyterSession{
		{ID: "4f1c8d2e-0000-4000-8000-000000000001", Path: "notebooks/a.ipynb", Name: "a.ipynb", Type: "notebook"},
		{ID: "4f1c8d2e-0000-4000-8000-000000000002", Path: "console-1", Type: "console"},
	}
	if err := s.SetJupyterSessions(list); err != nil {
		t.Fatal(err)
	}
	got := s.JupyterSessions()
	got[0].Path = "changed by the caller"
	if again := s.JupyterSessions(); !slices.Equal(again, list) {
		t.Fatalf("Jupyter sessions %+v, want %+v (a copy each time)", again, list)
	}
	recs, err := st.Sessions()
	if err != nil || len(recs) != 1 || !slices.Equal(recs[0].JupyterSessions, list) {
		t.Fatalf("stored records %+v %v", recs, err)
	}

	// Past the bounds: ErrInvalid, and nothing changes.
	many := make([]sessions.JupyterSession, sessions.MaxJupyterSessions+1)
	for i := range many {
		many[i] = sessions.JupyterSession{ID: strings.Repeat("a", 10) + string(rune('A'+i%26)) + string(rune('a'+i/26)), Type: "notebook"}
	}
	for name, bad := range map[string][]sessions.JupyterSession{
		"too many":    many,
		"empty id":    {{Path: "x"}},
		"long path":   {{ID: "x", Path: strings.Repeat("p", sessions.MaxJupyterPathBytes+1)}},
		"long name":   {{ID: "x", Name: strings.Repeat("n", sessions.MaxJupyterNameBytes+1)}},
		"long type":   {{ID: "x", Type: strings.Repeat("t", sessions.MaxJupyterTypeBytes+1)}},
		"long id":     {{ID: strings.Repeat("i", sessions.MaxJupyterIDBytes+1)}},
		"not UTF-8":   {{ID: "x", Path: "\xff"}},
		"same id":     {{ID: "x"}, {ID: "x"}},
		"other field": {{ID: "x", Type: "\xc3"}},
	} {
		if err := s.SetJupyterSessions(bad); !errors.Is(err, sessions.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if again := s.JupyterSessions(); !slices.Equal(again, list) {
		t.Fatalf("after refused changes: %+v", again)
	}

	if err := s.SetJupyterSessions(nil); err != nil {
		t.Fatal(err)
	}
	if recs, _ := st.Sessions(); len(recs) != 1 || len(recs[0].JupyterSessions) != 0 {
		t.Fatalf("stored after clearing: %+v", recs)
	}
	if err := s.SetJupyterSessions(list[:1]); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(context.Background(), "tenant-a", s.ID()); err != nil {
		t.Fatal(err)
	}
	if recs, _ := st.Sessions(); len(recs) != 0 {
		t.Fatalf("records after delete: %+v", recs)
	}
	if err := s.SetJupyterSessions(list); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("set on a deleted session: %v", err)
	}
}
