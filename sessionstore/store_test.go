package sessionstore_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessionstore"
)

func TestStore(t *testing.T) {
	dir := t.TempDir()
	s, err := sessionstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dir, sessionstore.FileName))
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("store mode %v: it holds kernel keys", st.Mode().Perm())
	}
	r := sessionstore.Record{ID: "abc12345", Tenant: "t", CreatedAt: time.Now().UTC().Round(0), LastSeq: 7,
		Sandbox: sandbox.State{ID: "abc12345", UID: 300001, Conn: kernel.ConnectionInfo{Key: "secret"}}}
	if err := s.Put(r, sessionstore.Record{ID: "def12345"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A restarted gateway reads them back.
	s, err = sessionstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all, err := s.Sessions()
	if err != nil || len(all) != 2 || all[0].Sandbox.Conn.Key != "secret" || all[0].LastSeq != 7 || !all[0].CreatedAt.Equal(r.CreatedAt) {
		t.Fatalf("read back: %+v %v", all, err)
	}
	if err := s.MarkLost(all[1], "container gone"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("abc12345"); err != nil {
		t.Fatal(err)
	}
	all, _ = s.Sessions()
	lost, _ := s.Lost()
	if len(all) != 0 || len(lost) != 1 || lost[0].Reason != "container gone" {
		t.Fatalf("after delete and lost: %+v %+v", all, lost)
	}
}
