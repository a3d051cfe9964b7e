package gateway_test

import (
	"bytes"
	"encoding/csv"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
)

// raw does a request with a raw body and returns status, headers and body.
func (e *env) raw(method, path string, body io.Reader, ctype string) (int, http.Header, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, body)
	req.Header.Set("Authorization", "Bearer "+keyA)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

const salesCSV = "region,units,price\nnorth,10,2.5\nsouth,20,3.0\neast,5,10.0\nwest,15,4.0\n"

func fileFlow(t *testing.T, e *env, id string) {
	base := "/v1/sessions/" + id
	// 1. upload sales.csv (multipart, as the browser does)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "sales.csv")
	fw.Write([]byte(salesCSV))
	mw.Close()
	if st, _, b := e.raw("POST", base+"/files", &body, mw.FormDataContentType()); st != http.StatusCreated {
		t.Fatalf("upload: %d %s", st, b)
	}
	// HEAD tells whether a file exists; PUT ?type=dir makes directories.
	if st, _, _ := e.raw("HEAD", base+"/files/sales.csv", nil, ""); st != http.StatusOK {
		t.Fatalf("HEAD existing file: %d", st)
	}
	if st, _, _ := e.raw("HEAD", base+"/files/nope.csv", nil, ""); st != http.StatusNotFound {
		t.Fatalf("HEAD missing file: %d", st)
	}
	if st, _, b := e.raw("PUT", base+"/files/made/deep?type=dir", nil, ""); st != http.StatusCreated || !strings.Contains(string(b), `"type":"dir"`) {
		t.Fatalf("mkdir: %d %s", st, b)
	}
	if x := e.exec(keyA, id, "import os; print(os.path.isdir('made/deep'))", 0); strings.TrimSpace(x.Stdout) != "True" {
		t.Fatalf("mkdir not visible to the kernel: %+v", x)
	}
	// 2. pandas reads it
	x := e.exec(keyA, id, "import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.describe())", 0)
	if x.Status != "ok" || !strings.Contains(x.Stdout, "units") || !strings.Contains(x.Stdout, "mean") {
		t.Fatalf("describe: %+v", x)
	}
	// 3+4. plot, write summary.csv and chart.png
	x = e.exec(keyA, id, `import matplotlib.pyplot as plt
df['revenue'] = df.units * df.price
df.groupby('region').revenue.sum().to_csv('summary.csv')
fig = df.plot.bar(x='region', y='revenue').get_figure()
fig.savefig('chart.png')
plt.show()`, 0)
	if x.Status != "ok" {
		t.Fatalf("plot: %+v", x)
	}
	hasPNG := false
	for _, o := range x.Outputs {
		if o.Type == "display" && bytes.Contains(o.Data, []byte("image/png")) {
			hasPNG = true
		}
	}
	changes := map[string]string{}
	for _, f := range x.Files {
		changes[f.Path] = f.Change
	}
	if !hasPNG || changes["summary.csv"] != "created" || changes["chart.png"] != "created" {
		t.Fatalf("want a PNG display and created files, got png=%v files=%+v", hasPNG, x.Files)
	}
	fileEvents := 0
	for _, o := range x.Outputs {
		if o.Type == "file" && o.ID == x.ID && *o.Size > 0 {
			fileEvents++
		}
	}
	if fileEvents != 2 {
		t.Fatalf("file events in outputs: %d", fileEvents)
	}
	// Over the WebSocket the same execution reports file events too.
	w := e.ws(keyA, id, "")
	w.send(map[string]any{"type": "execute", "id": "f1", "code": "open('summary.csv','a').write('extra,0\\n')"})
	evs := w.until(doneFor("f1"))
	gotWS := false
	for _, ev := range evs {
		if ev.Type == "file" && ev.ID == "f1" && ev.Path == "summary.csv" && ev.Change == "modified" {
			gotWS = true
		}
	}
	if !gotWS {
		t.Fatalf("no modified file event over ws: %+v", evs)
	}
	// 5. list shows them
	var list struct {
		Entries []struct {
			Name, Path, Type string
			Size             int64
		}
	}
	if st := e.call(keyA, "GET", base+"/files", nil, &list); st != http.StatusOK {
		t.Fatalf("list: %d", st)
	}
	names := map[string]int64{}
	for _, en := range list.Entries {
		names[en.Name] = en.Size
	}
	if names["summary.csv"] == 0 || names["chart.png"] == 0 || names["sales.csv"] != int64(len(salesCSV)) {
		t.Fatalf("list: %+v", list)
	}
	// 6. download summary.csv: it matches what pandas computed
	st, h, b := e.raw("GET", base+"/files/summary.csv", nil, "")
	if st != http.StatusOK || h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Disposition"), "summary.csv") {
		t.Fatalf("download: %d %v", st, h)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"north": "25.0", "south": "60.0", "east": "50.0", "west": "60.0"}
	for _, r := range rows[1:] {
		if w, ok := want[r[0]]; ok && r[1] != w {
			t.Fatalf("summary row %v, want %s", r, w)
		}
	}
	// The ?token= form works for downloads (browser links).
	resp, err := http.Get(e.url + base + "/files/chart.png?token=" + keyA)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("token download: %v %v", err, resp)
	}
	resp.Body.Close()
	// HTML is an attachment, never rendered on our origin.
	e.raw("PUT", base+"/files/page.html", strings.NewReader("<script>alert(1)</script>"), "")
	_, h, _ = e.raw("GET", base+"/files/page.html", nil, "")
	if !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("html served inline: %v", h)
	}
	// A file call while the kernel is busy succeeds at once.
	w.send(map[string]any{"type": "execute", "id": "busy", "code": "import time; time.sleep(2)"})
	w.until(func(ev frame) bool { return ev.Type == "kernel" && ev.State == "busy" })
	start := time.Now()
	if st, _, _ := e.raw("PUT", base+"/files/during.txt", strings.NewReader("ok"), ""); st != http.StatusCreated {
		t.Fatalf("upload during execution: %d", st)
	}
	if st, _, b := e.raw("GET", base+"/files/during.txt", nil, ""); st != 200 || string(b) != "ok" || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("download during execution: %d %q after %v", st, b, time.Since(start))
	}
	w.until(doneFor("busy"))
	if st, _, _ := e.raw("DELETE", base+"/files/during.txt", nil, ""); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	if st, _, _ := e.raw("GET", base+"/files/during.txt", nil, ""); st != http.StatusNotFound {
		t.Fatalf("deleted file still there: %d", st)
	}
}

func fileAttacks(t *testing.T, e *env, id string) {
	base := "/v1/sessions/" + id
	// The code plants symlinks to host files and to another session.
	other := e.create(keyA, nil)
	e.raw("PUT", "/v1/sessions/"+other.ID+"/files/secret.txt", strings.NewReader("other session"), "")
	x := e.exec(keyA, id, `import os
for name, target in [("shadow", "/etc/shadow"), ("passwd", "/etc/passwd"), ("hostroot", "/"), ("up", "..")]:
    os.symlink(target, name)
os.mkdir("real")`, 0)
	if x.Status != "ok" {
		t.Fatalf("planting symlinks: %+v", x)
	}
	hostShadow, _ := os.ReadFile("/etc/passwd")
	for _, p := range []string{"shadow", "passwd", "hostroot/etc/passwd", "up/secret.txt"} {
		st, _, b := e.raw("GET", base+"/files/"+p, nil, "")
		if st == http.StatusOK || (len(hostShadow) > 0 && bytes.Contains(b, hostShadow[:min(len(hostShadow), 20)])) {
			t.Errorf("GET %s through a symlink: %d %q", p, st, b)
		}
		if st, _, _ := e.raw("PUT", base+"/files/"+p+"/x", strings.NewReader("pwned"), ""); st < 400 {
			t.Errorf("PUT under %s: %d", p, st)
		}
	}
	// Traversal spellings are rejected with 400 before touching anything.
	for _, p := range []string{"..%2F..%2Fetc%2Fpasswd", "%2e%2e/%2e%2e/etc/passwd", "a/%2e%2e/%2e%2e/x", "%2Fetc%2Fpasswd", "a%00b", "a%5C..%5Cb", strings.Repeat("a/", 700) + "x", "a//b"} {
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			st, _, _ := e.raw(m, base+"/files/"+p, strings.NewReader("x"), "")
			if st != http.StatusBadRequest {
				t.Errorf("%s %s: %d, want 400", m, p[:min(len(p), 40)], st)
			}
		}
	}
	if st, _, _ := e.raw("GET", base+"/files?path=../", nil, ""); st != http.StatusBadRequest {
		t.Errorf("list ..: %d", st)
	}
	if st, _, _ := e.raw("GET", base+"/files?path=hostroot", nil, ""); st != http.StatusBadRequest && st != http.StatusConflict {
		t.Errorf("list through symlink: %d", st)
	}
	// Deleting a symlink removes the link only.
	if st, _, _ := e.raw("DELETE", base+"/files/up", nil, ""); st != http.StatusNoContent {
		t.Errorf("delete symlink: %d", st)
	}
	if st, _, b := e.raw("GET", "/v1/sessions/"+other.ID+"/files/secret.txt", nil, ""); st != 200 || string(b) != "other session" {
		t.Fatalf("other session's file changed: %d %q", st, b)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal(err)
	}
	// Upload past the workspace quota fails cleanly and the session goes on.
	if os.Geteuid() == 0 {
		small := e.create(keyA, map[string]any{"limits": map[string]any{"workspace_mb": 8}})
		st, _, b := e.raw("PUT", "/v1/sessions/"+small.ID+"/files/big.bin", bytes.NewReader(make([]byte, 16<<20)), "")
		if st != http.StatusInsufficientStorage || !strings.Contains(string(b), "workspace_full") {
			t.Fatalf("over quota: %d %s", st, b)
		}
		var list struct{ Entries []any }
		e.call(keyA, "GET", "/v1/sessions/"+small.ID+"/files", nil, &list)
		if len(list.Entries) != 0 {
			t.Fatalf("partial upload left behind: %+v", list)
		}
		x := e.exec(keyA, small.ID, "f = open('fill','wb')\ntry:\n    f.write(b'x' * (16 << 20)); f.flush()\nexcept OSError as e:\n    print('full', e.errno)", 0)
		if !strings.Contains(x.Stdout, "full") {
			t.Fatalf("code wrote past the quota: %+v", x)
		}
	}
}

// zeros is an endless reader that allocates nothing.
type zeros struct{ left int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > z.left {
		n = z.left
	}
	clear(p[:n])
	z.left -= n
	return int(n), nil
}

func rssKB(t *testing.T) int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			n, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

func TestUploadStreams(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, map[string]any{"limits": map[string]any{"workspace_mb": 128}})
	before := rssKB(t)
	const size = 50 << 20
	req, _ := http.NewRequest("PUT", e.url+"/v1/sessions/"+s.ID+"/files/big.bin", &zeros{size})
	req.ContentLength = size
	req.Header.Set("Authorization", "Bearer "+keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %v %v", err, resp)
	}
	resp.Body.Close()
	grew := rssKB(t) - before
	t.Logf("RSS grew by %d KiB for a 50 MiB upload", grew)
	if grew > 16<<10 {
		t.Fatalf("RSS grew by %d KiB: the upload was buffered", grew)
	}
	x := e.exec(keyA, s.ID, "import os; print(os.path.getsize('big.bin'))", 0)
	if strings.TrimSpace(x.Stdout) != strconv.Itoa(size) {
		t.Fatalf("size seen by the kernel: %q", x.Stdout)
	}
	// Download streams too.
	before = rssKB(t)
	resp, err = http.Get(e.url + "/v1/sessions/" + s.ID + "/files/big.bin?token=" + keyA)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n != size || rssKB(t)-before > 16<<10 {
		t.Fatalf("download: %d bytes, RSS grew %d KiB", n, rssKB(t)-before)
	}
	// Over the upload limit (100 MiB by default): 413, nothing stored.
	req, _ = http.NewRequest("PUT", e.url+"/v1/sessions/"+s.ID+"/files/huge.bin", &zeros{101 << 20})
	req.ContentLength = 101 << 20
	req.Header.Set("Authorization", "Bearer "+keyA)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("upload over the limit: %d", resp.StatusCode)
	}
	if st, _, _ := e.raw("GET", "/v1/sessions/"+s.ID+"/files/huge.bin", nil, ""); st != http.StatusNotFound {
		t.Fatalf("oversized upload stored: %d", st)
	}
}

// TestFileMetadata: a file uploaded with metadata (E2B's
// files.write(..., metadata=)) carries it in listings and stats, as does
// one whose code set a user.e2b. attribute; writing it again without
// metadata clears it; bad metadata is a 400 and writes nothing.
func TestFileMetadata(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			s := e.create(keyA, nil)
			base := "/v1/sessions/" + s.ID
			put := func(p, body, meta string) (int, []byte) {
				t.Helper()
				req, _ := http.NewRequest("PUT", e.url+base+"/files/"+p, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+keyA)
				if meta != "" {
					req.Header.Set(gateway.MetadataHeader, meta)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, b
			}
			listed := func(name string) map[string]string {
				t.Helper()
				var l struct {
					Entries []struct {
						Name     string
						Metadata map[string]string
					}
				}
				if st := e.call(keyA, "GET", base+"/files?path=m", nil, &l); st != http.StatusOK {
					t.Fatalf("list: %d", st)
				}
				for _, en := range l.Entries {
					if en.Name == name {
						return en.Metadata
					}
				}
				t.Fatalf("%s not listed: %+v", name, l.Entries)
				return nil
			}
			if st, b := put("m/a.txt", "a", `{"author":"mish","purpose":"upload"}`); st != http.StatusCreated || !strings.Contains(string(b), `"metadata":{"author":"mish","purpose":"upload"}`) {
				t.Fatalf("upload with metadata: %d %s", st, b)
			}
			if m := listed("a.txt"); m["author"] != "mish" || m["purpose"] != "upload" || len(m) != 2 {
				t.Fatalf("listed metadata: %v", m)
			}
			// The code sees and sets the attributes too (not under gVisor,
			// whose file system keeps no extended attributes for it).
			if name != "docker-runsc" {
				if x := e.exec(keyA, s.ID, "import os; os.getxattr('m/a.txt', 'user.e2b.author').decode()", 30); !strings.Contains(string(x.Result), "mish") {
					t.Fatalf("the code's view: %+v %s", x, x.Result)
				}
				if x := e.exec(keyA, s.ID, "import os; open('m/b.txt','w').write('b'); os.setxattr('m/b.txt', 'user.e2b.stage', b'code')", 30); x.Status != "ok" {
					t.Fatalf("setxattr: %+v", x)
				}
				if m := listed("b.txt"); m["stage"] != "code" {
					t.Fatalf("metadata the code set: %v", m)
				}
			}
			if st, _ := put("m/a.txt", "again", ""); st != http.StatusCreated {
				t.Fatalf("rewrite: %d", st)
			}
			if m := listed("a.txt"); m != nil {
				t.Fatalf("a rewrite without metadata kept %v", m)
			}
			for _, bad := range []string{`{"bad key":"v"}`, `{"":"v"}`, `{"k":"bad\nvalue"}`, `not json`} {
				if st, b := put("m/bad.txt", "x", bad); st != http.StatusBadRequest {
					t.Fatalf("metadata %q: %d %s", bad, st, b)
				}
			}
			if st, _, _ := e.raw("HEAD", base+"/files/m/bad.txt", nil, ""); st != http.StatusNotFound {
				t.Fatalf("a refused upload wrote the file: %d", st)
			}
		})
	}
}
