package jupyter_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/rs/zerolog"
)

// fakeEnv is an env whose gateway is a gateway.Server over a sessionstest
// Manager with cfg (the code-driven fake kernel), on a loopback listener
// until the test ends: the fast tier's. Only its url is set (no
// apptest.Gateway): use channels, not the env's call helpers.
func fakeEnv(t *testing.T, cfg sessions.Config) *env {
	t.Helper()
	mgr, _ := sessionstest.NewManager(t, cfg)
	srv, err := gateway.New(gateway.Config{APIKeys: []string{keyA, keyB}}, mgr, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	return &env{t: t, url: "http://" + ln.Addr().String()}
}

// TestChannelsOnTheFake (short tier): the Jupyter face on the fake
// kernel. A kernel started with POST /api/kernels runs an execute_request
// sent on its channels: iopub busy, the code's stream output, idle, and
// an ok execute_reply, all with the request as their parent.
func TestChannelsOnTheFake(t *testing.T) {
	t.Parallel()
	e := fakeEnv(t, sessions.Config{})
	req, _ := http.NewRequest(http.MethodPost, e.url+"/api/kernels", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "token "+keyA)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var k kernelModel
	err = json.NewDecoder(resp.Body).Decode(&k)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || k.ID == "" {
		t.Fatalf("start kernel: HTTP %d %+v %v", resp.StatusCode, k, err)
	}

	for _, v1 := range []bool{false, true} {
		c := e.channels(t, keyA, k.ID, v1, "")
		rep, iopub := c.execute("print:hi")
		if rep.Channel != "shell" || rep.Header.MsgType != "execute_reply" || rep.Content["status"] != "ok" {
			t.Fatalf("v1 %v: reply %v", v1, rep)
		}
		var states, texts []string
		for _, m := range iopub {
			switch m.Header.MsgType {
			case "status":
				states = append(states, m.Content["execution_state"].(string))
			case "stream":
				if m.Content["name"] != "stdout" {
					t.Fatalf("v1 %v: stream %v", v1, m)
				}
				texts = append(texts, m.Content["text"].(string))
				if len(states) != 1 {
					t.Fatalf("v1 %v: the stream came after %v: %v", v1, states, iopub)
				}
			}
		}
		if strings.Join(texts, "") != "hi" || strings.Join(states, ",") != "busy,idle" {
			t.Fatalf("v1 %v: iopub %v", v1, iopub)
		}
	}
}
