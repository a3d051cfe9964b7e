package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// TestVolumes: a volume written in one session is read in the next (on
// each runtime that binds them), its quota holds in the sandbox, another
// tenant neither sees nor mounts it, and it cannot be deleted while a
// session mounts it.
func TestVolumes(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			var v api.Volume
			if st := e.call(keyA, "POST", "/v1/volumes", api.CreateVolumeRequest{Name: "data", SizeMB: 32}, &v); st == http.StatusNotImplemented {
				testkit.Unavailable(t, "this gateway keeps no volumes (not root, or no loop devices)")
			} else if st != http.StatusCreated || v.Name != "data" || v.SizeMB != 32 {
				t.Fatalf("create: %d %+v", st, v)
			}
			if st := e.call(keyA, "POST", "/v1/volumes", api.CreateVolumeRequest{Name: "data"}, nil); st != http.StatusConflict {
				t.Fatalf("again: %d", st)
			}
			if st := e.call(keyA, "POST", "/v1/volumes", api.CreateVolumeRequest{Name: "../x"}, nil); st != http.StatusBadRequest {
				t.Fatalf("a bad name: %d", st)
			}
			// Another tenant: not listed, not found, not mounted.
			var list api.VolumeList
			if e.call(keyB, "GET", "/v1/volumes", nil, &list); len(list.Volumes) != 0 {
				t.Fatalf("tenant B lists %+v", list)
			}
			if st := e.call(keyB, "POST", "/v1/sessions", api.CreateSessionRequest{Volumes: map[string]string{"data": "/home/user/data"}}, nil); st != http.StatusNotFound {
				t.Fatalf("tenant B mounts tenant A's volume: %d", st)
			}

			first := e.create(keyA, api.CreateSessionRequest{Volumes: map[string]string{"data": "/home/user/data"}})
			if x := e.exec(keyA, first.ID, "open('data/kept.txt', 'w').write('from the first session')", 30); x.Status != "ok" {
				t.Fatalf("write: %+v", x)
			}
			// The quota: 32 MiB, whatever the workspace's.
			x := e.exec(keyA, first.ID, "try:\n    open('data/big', 'wb').write(b'x' * (40 << 20))\nexcept OSError as e:\n    print(e.errno)", 60)
			if !strings.Contains(x.Stdout, "28") { // ENOSPC
				t.Fatalf("past the quota: %+v", x)
			}
			e.exec(keyA, first.ID, "import os; os.remove('data/big')", 30)
			var got api.Volume
			if e.call(keyA, "GET", "/v1/volumes/data", nil, &got); got.Mounts != 1 || got.UsedBytes <= 0 {
				t.Fatalf("mounted volume: %+v", got)
			}
			if st := e.call(keyA, "DELETE", "/v1/volumes/data", nil, nil); st != http.StatusConflict {
				t.Fatalf("delete while mounted: %d", st)
			}
			var info api.Session
			if e.call(keyA, "GET", "/v1/sessions/"+first.ID, nil, &info); info.Volumes["data"] != "/home/user/data" {
				t.Fatalf("session volumes %+v", info.Volumes)
			}
			if st := e.call(keyA, "DELETE", "/v1/sessions/"+first.ID, nil, nil); st != http.StatusNoContent {
				t.Fatalf("end the first session: %d", st)
			}

			// The next session, at another path: the file is there, through
			// the files API too.
			next := e.create(keyA, api.CreateSessionRequest{Volumes: map[string]string{"data": "shared/vol"}})
			if x := e.exec(keyA, next.ID, "print(open('/home/user/shared/vol/kept.txt').read())", 30); strings.TrimSpace(x.Stdout) != "from the first session" {
				t.Fatalf("the next session reads: %+v", x)
			}
			if st, _, f := e.raw("GET", "/v1/sessions/"+next.ID+"/files/shared/vol/kept.txt", nil, ""); st != http.StatusOK || string(f) != "from the first session" {
				t.Fatalf("files API: %d %q", st, f)
			}
			// Removing the directory that holds the mount, through the files
			// API, never empties the volume.
			if st, _, b := e.raw("DELETE", "/v1/sessions/"+next.ID+"/files/shared", nil, ""); st != http.StatusConflict {
				t.Fatalf("remove the volume's parent: %d %s", st, b)
			}
			if x := e.exec(keyA, next.ID, "print(open('/home/user/shared/vol/kept.txt').read())", 30); strings.TrimSpace(x.Stdout) != "from the first session" {
				t.Fatalf("after a refused remove: %+v", x)
			}
			if st := e.call(keyA, "DELETE", "/v1/sessions/"+next.ID, nil, nil); st != http.StatusNoContent {
				t.Fatal(st)
			}
			if st := e.call(keyA, "DELETE", "/v1/volumes/data", nil, nil); st != http.StatusNoContent {
				t.Fatalf("delete: %d", st)
			}
			if st := e.call(keyA, "GET", "/v1/volumes/data", nil, nil); st != http.StatusNotFound {
				t.Fatalf("after delete: %d", st)
			}
		})
	}
}
