package sessionstore_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessionstore"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sessionstore.CheckArg { // Open's check runs this binary
		os.Exit(sessionstore.CheckMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

func open(t *testing.T, cfg sessionstore.Config) *sessionstore.Store {
	t.Helper()
	s, err := sessionstore.Open(cfg, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore(t *testing.T) {
	dir := t.TempDir()
	s := open(t, sessionstore.Config{Dir: dir})
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
	s = open(t, sessionstore.Config{Dir: dir})
	defer s.Close()
	all, err := s.Sessions()
	if err != nil || len(all) != 2 || all[0].Sandbox.Conn.Key != "secret" || all[0].LastSeq != 7 || !all[0].CreatedAt.Equal(r.CreatedAt) {
		t.Fatalf("read back: %+v %v", all, err)
	}
	if all[0].Version != 1 { // no deny list: the version every gateway reads
		t.Fatalf("record version %d", all[0].Version)
	}
	// A record with a network deny list is of version 2: a gateway that
	// knew no deny lists must not resume the network without it.
	withDeny := all[0]
	withDeny.NetworkDeny = []string{"blocked.example"}
	if err := s.Put(withDeny); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Sessions(); err != nil || again[0].Version != 2 || again[0].NetworkDeny[0] != "blocked.example" {
		t.Fatalf("a record with a deny list: %+v %v", again, err)
	}
	if err := s.Put(all[0]); err != nil { // as it was, for what follows
		t.Fatal(err)
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
	// A record the store cannot keep is left out, the others written.
	err = s.Put(sessionstore.Record{ID: "../escape"}, sessionstore.Record{ID: "ghi12345", Network: []string{strings.Repeat("x", 2<<20)}},
		sessionstore.Record{ID: "jkl12345"})
	if all, _ = s.Sessions(); err == nil || len(all) != 1 || all[0].ID != "jkl12345" {
		t.Fatalf("put of bad records: %v, stored %+v", err, all)
	}
}

// populate writes a store of n records (a few pages of them) in dir.
func populate(t *testing.T, dir string, n int) {
	t.Helper()
	s := open(t, sessionstore.Config{Dir: dir})
	defer s.Close()
	var recs []sessionstore.Record
	for i := range n {
		id := "sess-" + strconv.Itoa(100000+i)
		recs = append(recs, sessionstore.Record{ID: id, Tenant: "tenant1", Runtime: "docker", CreatedAt: time.Now(), LastActive: time.Now(),
			Network: []string{"pypi.org", "files.pythonhosted.org", strings.Repeat("a", 200) + ".example.com"},
			Sandbox: sandbox.State{ID: id, UID: 300000 + i, Conn: kernel.ConnectionInfo{Key: strings.Repeat("k", 64)}}})
	}
	if err := s.Put(recs...); err != nil {
		t.Fatal(err)
	}
}

// page size and meta layout of a bbolt file: a page header of 16 bytes,
// then magic, version, page size, flags (4 bytes each), the root bucket
// (root page id, sequence), the freelist page id, the high-water page id,
// the transaction id and the checksum (FNV-64a of what precedes it).
const (
	pageSize    = 4096
	metaRoot    = 16 + 16
	metaFree    = metaRoot + 16
	metaPgid    = metaFree + 8
	metaSum     = metaPgid + 16
	noFreelist  = ^uint64(0)
	branchFlag  = 0x01
	leafFlag    = 0x02
	elementSize = 16
)

// forgeMeta rewrites both meta pages of b with f and valid checksums: a
// file bbolt's own validation accepts.
func forgeMeta(b []byte, f func(meta []byte)) {
	for _, off := range []int{0, pageSize} {
		m := b[off : off+pageSize]
		f(m)
		h := fnv.New64a()
		h.Write(m[16:metaSum])
		binary.LittleEndian.PutUint64(m[metaSum:], h.Sum64())
	}
}

// pgid returns the high-water page id of b's meta pages.
func pgid(b []byte) uint64 { return binary.LittleEndian.Uint64(b[metaPgid:]) }

// TestCorruptFile corrupts a real store file in several ways (garbage,
// truncation, broken checksums, garbage pages, and forged files whose
// meta pages bbolt accepts: a branch page that points to itself, a
// leaf that claims 65,535 elements, no freelist over a broken tree, a
// root page past the end), and replaces it with other things than a
// file. Each time Open neither panics nor hangs nor fails: the file is
// moved aside, intact, to sessions.db.corrupt-<time>, and the store
// starts empty and works. Without the check in its own process, several
// of these crash the test binary (panics in bbolt's own goroutines,
// faults, endless recursion).
func TestCorruptFile(t *testing.T) {
	src := t.TempDir()
	populate(t, src, 300)
	good, err := os.ReadFile(filepath.Join(src, sessionstore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(good) < 8*pageSize {
		t.Fatalf("store of %d bytes: want a few pages", len(good))
	}
	lastPage := func(b []byte) int { return len(b)/pageSize - 1 }
	cases := map[string]func(b []byte) []byte{
		"garbage": func(b []byte) []byte { return bytes.Repeat([]byte{0xAB, 0x17, 0x00, 0xFF}, len(b)/4) },
		"short":   func(b []byte) []byte { return b[:100] },
		"truncated to its meta pages": func(b []byte) []byte {
			return b[:2*pageSize]
		},
		"truncated mid-tree": func(b []byte) []byte { return b[:4*pageSize+123] },
		"both checksums broken": func(b []byte) []byte {
			b[metaPgid] ^= 0xFF
			b[pageSize+metaPgid] ^= 0xFF
			return b
		},
		"garbage data pages": func(b []byte) []byte {
			for i := 2 * pageSize; i < len(b); i++ {
				b[i] = byte(i*7 + 3)
			}
			return b
		},
		"forged: a branch page pointing to itself": func(b []byte) []byte {
			p := uint64(lastPage(b))
			pg := b[p*pageSize : (p+1)*pageSize]
			clear(pg)
			binary.LittleEndian.PutUint64(pg[0:], p)
			binary.LittleEndian.PutUint16(pg[8:], branchFlag)
			binary.LittleEndian.PutUint16(pg[10:], 1)
			binary.LittleEndian.PutUint32(pg[16:], elementSize) // the key follows the element
			binary.LittleEndian.PutUint32(pg[20:], 1)
			binary.LittleEndian.PutUint64(pg[24:], p)
			pg[32] = 'a'
			forgeMeta(b, func(m []byte) { binary.LittleEndian.PutUint64(m[metaRoot:], p) })
			return b
		},
		"forged: a leaf claiming 65535 elements": func(b []byte) []byte {
			p := uint64(lastPage(b))
			pg := b[p*pageSize : (p+1)*pageSize]
			binary.LittleEndian.PutUint64(pg[0:], p)
			binary.LittleEndian.PutUint16(pg[8:], leafFlag)
			binary.LittleEndian.PutUint16(pg[10:], 0xFFFF)
			for i := 16; i < pageSize; i += 4 {
				binary.LittleEndian.PutUint32(pg[i:], 0x7FFFFFF0)
			}
			forgeMeta(b, func(m []byte) { binary.LittleEndian.PutUint64(m[metaRoot:], p) })
			return b
		},
		"forged: no freelist over a broken tree": func(b []byte) []byte {
			for i := 3 * pageSize; i < len(b); i++ {
				b[i] = 0xEE
			}
			forgeMeta(b, func(m []byte) { binary.LittleEndian.PutUint64(m[metaFree:], noFreelist) })
			return b
		},
		"forged: root past the end": func(b []byte) []byte {
			forgeMeta(b, func(m []byte) {
				binary.LittleEndian.PutUint64(m[metaPgid:], 1<<40)
				binary.LittleEndian.PutUint64(m[metaRoot:], 1<<40-1)
			})
			return b
		},
	}
	for name, corrupt := range cases {
		t.Run(name, func(t *testing.T) {
			if pgid(good) < 4 {
				t.Fatal("the good store is too small")
			}
			dir := t.TempDir()
			bad := corrupt(bytes.Clone(good))
			if err := os.WriteFile(filepath.Join(dir, sessionstore.FileName), bad, 0o600); err != nil {
				t.Fatal(err)
			}
			// A file that keeps the check busy is corrupt: the cycle of
			// pages does (bbolt's check loops on it).
			s := open(t, sessionstore.Config{Dir: dir, CheckTimeout: 5 * time.Second})
			defer s.Close()
			asideHolds(t, dir, bad)
			worksEmpty(t, s)
		})
	}
	t.Run("a symlink", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(src, sessionstore.FileName)
		if err := os.Symlink(target, filepath.Join(dir, sessionstore.FileName)); err != nil {
			t.Fatal(err)
		}
		s := open(t, sessionstore.Config{Dir: dir})
		defer s.Close()
		worksEmpty(t, s)
		if b, _ := os.ReadFile(target); !bytes.Equal(b, good) {
			t.Fatal("the symlink's target was changed")
		}
		if aside, _ := filepath.Glob(filepath.Join(dir, sessionstore.FileName+".corrupt-*")); len(aside) != 1 {
			t.Fatalf("copies aside: %v", aside)
		}
	})
	t.Run("a directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, sessionstore.FileName, "x"), 0o700); err != nil {
			t.Fatal(err)
		}
		s := open(t, sessionstore.Config{Dir: dir})
		defer s.Close()
		worksEmpty(t, s)
	})
	t.Run("copies aside are bounded", func(t *testing.T) {
		dir := t.TempDir()
		for i := range 5 {
			// Older copies, named as the store names them.
			name := filepath.Join(dir, sessionstore.FileName+".corrupt-2020010"+strconv.Itoa(i+1)+"T000000Z")
			if err := os.WriteFile(name, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, sessionstore.FileName), []byte("garbage, newest"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := open(t, sessionstore.Config{Dir: dir, KeepCorrupt: 2})
		defer s.Close()
		aside, _ := filepath.Glob(filepath.Join(dir, sessionstore.FileName+".corrupt-*"))
		if len(aside) != 2 || !strings.HasSuffix(aside[0], "20200105T000000Z") {
			t.Fatalf("copies kept: %v", aside)
		}
		asideHolds(t, dir, []byte("garbage, newest"))
	})
}

// asideHolds checks that the newest copy aside in dir holds want.
func asideHolds(t *testing.T, dir string, want []byte) {
	t.Helper()
	aside, _ := filepath.Glob(filepath.Join(dir, sessionstore.FileName+".corrupt-2*"))
	if len(aside) == 0 {
		t.Fatal("no copy aside")
	}
	got, err := os.ReadFile(aside[len(aside)-1])
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the copy aside differs from the corrupt file (%d bytes, want %d): %v", len(got), len(want), err)
	}
	if st, err := os.Stat(aside[len(aside)-1]); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("copy aside: %v %v", st.Mode(), err)
	}
}

// worksEmpty checks that s is empty and keeps a record.
func worksEmpty(t *testing.T, s *sessionstore.Store) {
	t.Helper()
	if all, err := s.Sessions(); err != nil || len(all) != 0 {
		t.Fatalf("a fresh store: %d records, %v", len(all), err)
	}
	if err := s.Put(sessionstore.Record{ID: "new12345"}); err != nil {
		t.Fatal(err)
	}
	if all, err := s.Sessions(); err != nil || len(all) != 1 {
		t.Fatalf("after a put: %+v %v", all, err)
	}
}

// TestUncheckableFile: when the check cannot run (its program is
// missing, or is not the check) or cannot read the file (another process
// holds it), Open fails cleanly and the file is left as it is.
func TestUncheckableFile(t *testing.T) {
	dir := t.TempDir()
	populate(t, dir, 3)
	path := filepath.Join(dir, sessionstore.FileName)
	before, _ := os.ReadFile(path)
	untouched := func(t *testing.T) {
		t.Helper()
		if b, _ := os.ReadFile(path); !bytes.Equal(b, before) {
			t.Fatal("the store file was changed")
		}
		if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 0 {
			t.Fatalf("moved aside: %v", aside)
		}
	}
	for name, argv := range map[string][]string{"missing": {"/nonexistent/glassroom"}, "not the check": {"/bin/true"}, "fails": {"/bin/false"}} {
		t.Run(name, func(t *testing.T) {
			s, err := sessionstore.Open(sessionstore.Config{Dir: dir, CheckCommand: argv}, zerolog.Nop())
			if err == nil {
				s.Close()
				t.Fatal("opened without a check")
			}
			if !strings.Contains(err.Error(), "did not run") {
				t.Fatalf("error %v", err)
			}
			untouched(t)
		})
	}
	t.Run("locked", func(t *testing.T) {
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second}) // as another gateway would
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s, err := sessionstore.Open(sessionstore.Config{Dir: dir}, zerolog.Nop())
		if err == nil {
			s.Close()
			t.Fatal("opened a store another process holds")
		}
		if !errors.Is(err, sessionstore.ErrLocked) {
			t.Fatalf("error %v, want ErrLocked", err)
		}
		untouched(t)
	})
}

// TestHostileRecords writes, into a valid store, records that are not
// (garbage, too big, of a newer version, under another id, not a session
// id, a nested bucket) next to a good one: Open moves each to the lost
// list with its reason (those with a session id as their key), and only
// the good one is read.
func TestHostileRecords(t *testing.T) {
	dir := t.TempDir()
	populate(t, dir, 1)
	path := filepath.Join(dir, sessionstore.FileName)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id string, f func(m map[string]any)) []byte {
		m := map[string]any{"id": id, "tenant": "tenant1", "sandbox": map[string]any{"id": id}}
		if f != nil {
			f(m)
		}
		b, _ := json.Marshal(m)
		return b
	}
	bad := map[string][]byte{
		"garbage-0001":      []byte("{\"id\": \"garbage-0001\", \x00\xff"),
		"not-json-0001":     []byte("\x00\x01\x02"),
		"huge-000001":       rec("huge-000001", func(m map[string]any) { m["running"] = strings.Repeat("r", 2<<20) }),
		"newer-000001":      rec("newer-000001", func(m map[string]any) { m["version"] = 99 }),
		"negative-0001":     rec("negative-0001", func(m map[string]any) { m["version"] = -1 }),
		"otherid-0001":      rec("someone-else-01", nil),
		"sandbox-0001":      rec("sandbox-0001", func(m map[string]any) { m["sandbox"] = map[string]any{"id": "someone-else-01"} }),
		"tenant-00001":      rec("tenant-00001", func(m map[string]any) { m["tenant"] = "../\x1b[31m" }),
		"idle-0000001":      rec("idle-0000001", func(m map[string]any) { m["idle_timeout"] = -5 }),
		"types-000001":      rec("types-000001", func(m map[string]any) { m["last_seq"] = "many" }),
		"\x00binary\xffkey": []byte("{}"),
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("sessions"))
		for k, v := range bad {
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		if _, err := b.CreateBucket([]byte("nested-00001")); err != nil {
			return err
		}
		return b.Put([]byte("legacy-00001"), rec("legacy-00001", nil)) // no version: an older gateway's
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, sessionstore.Config{Dir: dir})
	defer s.Close()
	all, err := s.Sessions()
	if err != nil || len(all) != 2 || all[0].ID != "legacy-00001" || all[1].ID != "sess-100000" {
		t.Fatalf("sessions %+v %v", all, err)
	}
	lost, err := s.Lost()
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, l := range lost {
		reasons[l.ID] = l.Reason
	}
	for id, want := range map[string]string{"garbage-0001": "not a record", "not-json-0001": "not a record", "huge-000001": "over 1048576",
		"newer-000001": "newer glassroom (record version 99", "negative-0001": "record version -1", "otherid-0001": "id does not match",
		"sandbox-0001": "another session's", "tenant-00001": "not a tenant id", "idle-0000001": "negative", "types-000001": "not a record",
		"nested-00001": "not a record"} {
		if !strings.Contains(reasons[id], want) {
			t.Errorf("lost %s: reason %q, want it to say %q", id, reasons[id], want)
		}
	}
	if len(lost) != 11 {
		t.Errorf("lost list %+v: the key that is not a session id is dropped, not listed", lost)
	}
}

// TestLostIsPruned: the lost list keeps at most LostMaxCount entries, the
// newest, none older than LostMaxAge, and no garbage.
func TestLostIsPruned(t *testing.T) {
	dir := t.TempDir()
	populate(t, dir, 1)
	db, err := bolt.Open(filepath.Join(dir, sessionstore.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("lost"))
		put := func(id string, at time.Time) error {
			v, _ := json.Marshal(sessionstore.Lost{ID: id, Reason: "r", At: at})
			return b.Put([]byte(id), v)
		}
		for i := range 50 { // one a minute, the newest first
			if err := put("recent-"+strconv.Itoa(1000+i), now.Add(-time.Duration(i)*time.Minute)); err != nil {
				return err
			}
		}
		for i := range 5 {
			if err := put("ancient-"+strconv.Itoa(1000+i), now.Add(-40*24*time.Hour)); err != nil {
				return err
			}
		}
		return b.Put([]byte("garbage-lost"), []byte("\xff"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, sessionstore.Config{Dir: dir, LostMaxCount: 20})
	defer s.Close()
	newest := func(want int) {
		t.Helper()
		lost, err := s.Lost()
		if err != nil || len(lost) != want {
			t.Fatalf("lost list of %d, want %d: %v", len(lost), want, err)
		}
		for _, l := range lost {
			if !strings.HasPrefix(l.ID, "recent-") && !strings.HasPrefix(l.ID, "marked-") {
				t.Fatalf("kept %s", l.ID)
			}
		}
		if last := lost[len(lost)-1]; last.At.Before(now.Add(-time.Minute)) {
			t.Fatalf("the newest were not kept: %+v", last)
		}
	}
	newest(20)
	all, _ := s.Sessions()
	for i := range 3 {
		r := all[0]
		r.ID = "marked-" + strconv.Itoa(1000+i)
		if err := s.MarkLost(r, strings.Repeat("why ", 1000)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			newest(18) // past the count: down to 90% of it, the newest kept
		}
	}
	newest(20)
	lost, _ := s.Lost()
	if l := lost[len(lost)-1]; l.ID != "marked-1002" || len(l.Reason) > 1024 {
		t.Fatalf("newest lost %s, reason of %d bytes", l.ID, len(l.Reason))
	}
}
