package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
)

// TestAccessTokenGrantsItsSessionOnly: a session's access token (what
// E2B calls the envd access token) stands in for the API key on what runs
// inside that session, and nowhere else: not another session, not the
// session's lifecycle, not the tenant's list; a changed token is refused
// and the token ends with its session.
func TestAccessTokenGrantsItsSessionOnly(t *testing.T) {
	e := newEnv(t, e2bLocal(t), sessions.Config{})
	c := e.client(keyA)
	ctx := context.Background()
	a, err := c.CreateSession(ctx, glclient.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.CreateSession(ctx, glclient.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.DeleteSession(ctx, b.ID)
	if a.AccessToken == "" || a.AccessToken == b.AccessToken {
		t.Fatalf("access tokens %q and %q", a.AccessToken, b.AccessToken)
	}
	if again, err := c.GetSession(ctx, a.ID); err != nil || again.AccessToken != a.AccessToken {
		t.Fatalf("a second look gave another token: %v", err)
	}
	if list, err := c.ListSessions(ctx); err != nil || len(list) == 0 || list[0].AccessToken != "" {
		t.Fatalf("a listing shows access tokens (or failed: %v)", err)
	}
	do := func(token, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set(gateway.AccessTokenHeader, token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	tok := a.AccessToken
	// What runs inside the session: code, files, commands.
	if st, out := do(tok, "POST", "/v1/sessions/"+a.ID+"/execute", `{"code": "6 * 7"}`); st != 200 || !strings.Contains(out, "42") {
		t.Fatalf("execute with the token: %d %s", st, out)
	}
	if st, out := do(tok, "PUT", "/v1/sessions/"+a.ID+"/files/t.txt", "by token"); st != 201 {
		t.Fatalf("write with the token: %d %s", st, out)
	}
	if st, out := do(tok, "GET", "/v1/sessions/"+a.ID+"/files/t.txt", ""); st != 200 || out != "by token" {
		t.Fatalf("read with the token: %d %s", st, out)
	}
	if st, out := do(tok, "POST", "/v1/sessions/"+a.ID+"/commands", `{"cmd": "echo hi"}`); st != 200 || !strings.Contains(out, "hi") {
		t.Fatalf("a command with the token: %d %s", st, out)
	}
	// Nothing else.
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/sessions/" + b.ID + "/execute", `{"code": "1"}`}, // another session
		{"GET", "/v1/sessions/" + b.ID + "/files/t.txt", ""},
		{"GET", "/v1/sessions/" + a.ID, ""}, // the session itself
		{"PATCH", "/v1/sessions/" + a.ID, `{"lifetime_s": 9000}`},
		{"DELETE", "/v1/sessions/" + a.ID, ""},
		{"POST", "/v1/sessions/" + a.ID + "/pause", ""},
		{"POST", "/v1/sessions/" + a.ID + "/resume", ""},
		{"GET", "/v1/sessions", ""},
		{"POST", "/v1/sessions", `{}`},
		{"GET", "/v1/volumes", ""},
	} {
		if st, out := do(tok, r.method, r.path, r.body); st != http.StatusUnauthorized {
			t.Errorf("%s %s with the token: %d %s, want 401", r.method, r.path, st, out)
		}
	}
	changed := []byte(tok)
	changed[len(changed)/2] ^= 1
	if st, _ := do(string(changed), "POST", "/v1/sessions/"+a.ID+"/execute", `{"code": "1"}`); st != http.StatusUnauthorized {
		t.Errorf("a changed token: %d, want 401", st)
	}
	if st, _ := do("", "POST", "/v1/sessions/"+a.ID+"/execute", `{"code": "1"}`); st != http.StatusUnauthorized {
		t.Errorf("no credential: %d, want 401", st)
	}
	// It ends with its session.
	if err := c.DeleteSession(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if st, out := do(tok, "POST", "/v1/sessions/"+a.ID+"/execute", `{"code": "1"}`); st != http.StatusNotFound {
		t.Errorf("after its session ended: %d %s, want 404", st, out)
	}
}
