package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
)

// TestSignedFileURLs: a URL minted with the API key reads or writes one
// file of one session from a bare HTTP client, without the key; it is
// refused (E2B's 401 body) when expired, tampered with, or used for the
// other operation, and ends with its session. Uploads through it are
// bounded as uploads are.
func TestSignedFileURLs(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnvGateway(t, rt(t), sessions.Config{}, gateway.Config{MaxUploadBytes: 1 << 20})
			s := e.create(keyA, nil)
			other := e.create(keyA, nil)
			if x := e.exec(keyA, s.ID, "import os; os.makedirs('out', exist_ok=True); open('out/r.txt','w').write('report')", 30); x.Status != "ok" {
				t.Fatalf("%+v", x)
			}
			mint := func(id, path, op string, expires *float64) api.FileURL {
				t.Helper()
				var u api.FileURL
				if st := e.call(keyA, "POST", "/v1/sessions/"+id+"/files-url", api.FileURLRequest{Path: path, Operation: op, ExpiresS: expires}, &u); st != http.StatusOK {
					t.Fatalf("files-url %s %s: %d", path, op, st)
				}
				return u
			}
			bare := func(method, url string, body io.Reader, ctype string) (int, []byte, http.Header) {
				t.Helper()
				req, _ := http.NewRequest(method, e.url+url, body)
				if ctype != "" {
					req.Header.Set("Content-Type", ctype)
				}
				resp, err := http.DefaultClient.Do(req) // no Authorization
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, b, resp.Header
			}
			refused := func(what string, st int, b []byte, msg string) {
				t.Helper()
				var body map[string]any
				_ = json.Unmarshal(b, &body)
				if st != http.StatusUnauthorized || body["code"] != float64(401) || !strings.Contains(body["message"].(string), msg) {
					t.Fatalf("%s: %d %s, want 401 %q", what, st, b, msg)
				}
			}

			// Read.
			r := mint(s.ID, "/home/user/out/r.txt", "read", nil)
			if r.Path != "out/r.txt" || !strings.HasPrefix(r.URL, "/v1/signed-files/") {
				t.Fatalf("minted %+v", r)
			}
			// The Go client's FileURL gives the absolute URL.
			viaClient, err := e.client(keyA).FileURL(context.Background(), s.ID, "out/r.txt", "read", time.Minute)
			if err != nil || !strings.HasPrefix(viaClient.URL, e.url+"/v1/signed-files/") || time.Until(viaClient.ExpiresAt) > time.Minute {
				t.Fatalf("client FileURL: %+v %v", viaClient, err)
			}
			if resp, err := http.Get(viaClient.URL); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("the client's URL: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
			st, b, h := bare("GET", r.URL, nil, "")
			if st != http.StatusOK || string(b) != "report" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") ||
				!strings.HasPrefix(h.Get("Content-Disposition"), "attachment") {
				t.Fatalf("a signed download: %d %q %v", st, b, h)
			}
			st, b, _ = bare("PUT", r.URL, strings.NewReader("overwritten"), "")
			refused("a read URL used to write", st, b, "another operation")

			// Expired, tampered with, another key's.
			zero := 0.0
			st, b, _ = bare("GET", mint(s.ID, "out/r.txt", "read", &zero).URL, nil, "")
			refused("an expired URL", st, b, "signature is already expired")
			tok := strings.TrimPrefix(r.URL, "/v1/signed-files/")
			forged := strings.TrimPrefix(mint(other.ID, "out/r.txt", "read", nil).URL, "/v1/signed-files/")
			st, b, _ = bare("GET", "/v1/signed-files/"+forged[:len(forged)/2]+tok[len(tok)/2:], nil, "")
			refused("halves of two sessions' tokens spliced", st, b, "invalid signature")
			if raw, err := base64.RawURLEncoding.DecodeString(tok); err != nil || bytes.Contains(raw, []byte(s.ID)) || bytes.Contains(raw, []byte("out/r.txt")) {
				t.Fatalf("the token is not opaque: %v", err)
			}
			st, b, _ = bare("GET", "/v1/signed-files/not-a-token", nil, "")
			refused("garbage", st, b, "invalid signature")

			// Write: PUT a body, POST a form's file part; the upload bound holds.
			w := mint(s.ID, "in/up.bin", "write", nil)
			if st, b, _ := bare("PUT", w.URL, strings.NewReader("put body"), "application/octet-stream"); st != http.StatusCreated {
				t.Fatalf("a signed PUT: %d %s", st, b)
			}
			if x := e.exec(keyA, s.ID, "open('in/up.bin').read()", 30); x.Status != "ok" || !strings.Contains(string(x.Result), "put body") {
				t.Fatalf("the PUT's file: %+v %s", x, x.Result)
			}
			var form bytes.Buffer
			mw := multipart.NewWriter(&form)
			fw, _ := mw.CreateFormFile("file", "ignored-name.txt")
			fw.Write([]byte("form body"))
			mw.Close()
			// E2B's answer to a form: 200 and the list of what it stored.
			if st, b, _ := bare("POST", w.URL, &form, mw.FormDataContentType()); st != http.StatusOK ||
				strings.TrimSpace(string(b)) != `[{"name":"up.bin","path":"/home/user/in/up.bin","type":"file"}]` {
				t.Fatalf("a signed multipart POST: %d %s", st, b)
			}
			if x := e.exec(keyA, s.ID, "open('in/up.bin').read()", 30); x.Status != "ok" || !strings.Contains(string(x.Result), "form body") {
				t.Fatalf("the POST's file: %+v %s", x, x.Result)
			}
			if st, b, _ := bare("GET", w.URL, nil, ""); st != http.StatusUnauthorized {
				t.Fatalf("a write URL used to read: %d %s", st, b)
			}
			if st, b, _ := bare("PUT", w.URL, bytes.NewReader(make([]byte, 2<<20)), ""); st != http.StatusRequestEntityTooLarge {
				t.Fatalf("an upload over the bound: %d %s", st, b)
			}
			if x := e.exec(keyA, s.ID, "open('in/up.bin').read()", 30); !strings.Contains(string(x.Result), "form body") {
				t.Fatalf("a refused upload changed the file: %s", x.Result)
			}

			// Bad requests for a URL.
			for _, req := range []api.FileURLRequest{{Path: "a", Operation: "delete"}, {Path: "../etc/passwd", Operation: "read"}, {Path: "", Operation: "read"}} {
				if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/files-url", req, nil); st != http.StatusBadRequest {
					t.Fatalf("files-url %+v: %d", req, st)
				}
			}
			if st := e.call(keyB, "POST", "/v1/sessions/"+s.ID+"/files-url", api.FileURLRequest{Path: "a", Operation: "read"}, nil); st != http.StatusNotFound {
				t.Fatalf("another key's session: %d", st)
			}

			// The session ends: its URLs with it.
			if st := e.call(keyA, "DELETE", "/v1/sessions/"+s.ID, nil, nil); st != http.StatusNoContent {
				t.Fatalf("delete: %d", st)
			}
			if st, b, _ := bare("GET", r.URL, nil, ""); st != http.StatusNotFound {
				t.Fatalf("a URL of an ended session: %d %s", st, b)
			}
		})
	}
}
