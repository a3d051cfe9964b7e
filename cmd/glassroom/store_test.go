package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/glassroom/glassroom/sessionstore"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
)

// TestCorruptStoreDoesNotStopTheGateway starts the real binary on a state
// directory whose session store was cut short mid-tree (bbolt panics on
// it): the gateway comes up, with the file moved aside to
// sessions.db.corrupt-<time> and an empty store that keeps new sessions.
func TestCorruptStoreDoesNotStopTheGateway(t *testing.T) {
	state := t.TempDir()
	for p := state; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711) // sandbox uids traverse it
	}
	st, err := sessionstore.Open(sessionstore.Config{Dir: state}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var recs []sessionstore.Record
	for i := range 200 {
		recs = append(recs, sessionstore.Record{ID: "stored-" + strconv.Itoa(100000+i), Network: []string{"pypi.org", "files.pythonhosted.org"}})
	}
	if err := st.Put(recs...); err != nil {
		t.Fatal(err)
	}
	st.Close()
	path := filepath.Join(state, sessionstore.FileName)
	if err := os.Truncate(path, 4*4096+123); err != nil {
		t.Fatal(err)
	}
	const key = "corrupt-store-test-key-0123456789"
	_, base := startBinary(t, "--state-dir", state, "--uid-base", strconv.Itoa(testkit.UIDBase(t)), "--api-key", key, "--log-level", "warn")
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
		t.Fatalf("copies aside: %v", aside)
	}
	var s struct{ ID string }
	if code := api(t, base, key, "POST", "/v1/sessions", nil, &s); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	if code := api(t, base, key, "DELETE", "/v1/sessions/"+s.ID, nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
}
