package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/client"
	"github.com/gorilla/websocket"
)

// fake is a hand-written hostile gateway: each path answers as the test says.
func fake(t *testing.T, h http.HandlerFunc) *client.Client {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{BaseURL: srv.URL, APIKey: "k", MaxResponseBytes: 1 << 20, MaxFrameBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []client.Config{
		{BaseURL: "", APIKey: "k"}, {BaseURL: "ftp://x", APIKey: "k"}, {BaseURL: "http://", APIKey: "k"},
		{BaseURL: "http://x"}, {BaseURL: "http://x", APIKey: "a\nb"}, {BaseURL: "http://x", APIKey: "k", MaxFrameBytes: -1},
	} {
		if _, err := client.New(cfg); err == nil {
			t.Errorf("accepted %+v", cfg)
		}
	}
}

func TestHostileResponses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("sends the key", func(t *testing.T) {
		c := fake(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer k" || r.URL.EscapedPath() != "/v1/sessions/a%2Fb%20c/files/d%20e/f%23g%3F" {
				http.Error(w, r.Header.Get("Authorization")+" "+r.URL.EscapedPath(), 400)
				return
			}
			w.WriteHeader(204)
		})
		if err := c.RemoveFile(ctx, "a/b c", "d e/f#g?"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("non-JSON success", func(t *testing.T) {
		c := fake(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>hello")) })
		if _, err := c.Execute(ctx, "s", "1", client.ExecuteOptions{}); !errors.Is(err, client.ErrProtocol) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("oversized success", func(t *testing.T) {
		c := fake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"stdout":"` + strings.Repeat("x", 2<<20) + `"}`))
		})
		if _, err := c.Execute(ctx, "s", "1", client.ExecuteOptions{}); !errors.Is(err, client.ErrProtocol) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("non-JSON error body is quoted, bounded", func(t *testing.T) {
		c := fake(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			w.Write([]byte(strings.Repeat("bad gateway ", 10000)))
		})
		_, err := c.ListSessions(ctx)
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.Status != 502 || len(ae.Message) > 600 || !errors.Is(err, client.ErrServer) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("gateway error JSON", func(t *testing.T) {
		c := fake(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(429)
			w.Write([]byte(`{"error":{"code":"queue_full","message":"later"}}`))
		})
		_, err := c.Execute(ctx, "s", "1", client.ExecuteOptions{})
		var ae *client.APIError
		if !errors.Is(err, client.ErrTooManyRequests) || !errors.As(err, &ae) || ae.Code != "queue_full" || ae.Message != "later" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("malformed bundle", func(t *testing.T) {
		c := fake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"status":"ok","result":{"image/png":"%%%","text/plain":["a","b"]}}`))
		})
		x, err := c.Execute(ctx, "s", "1", client.ExecuteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.Result.Binary("image/png"); !errors.Is(err, client.ErrProtocol) {
			t.Fatalf("bad base64: %v", err)
		}
		if x.Result.Text("text/plain") != "ab" || x.Result.Text("nope") != "" {
			t.Fatalf("text %q", x.Result.Text("text/plain"))
		}
	})
	for name, frame := range map[string]string{
		"bad frame":       "{not json",
		"oversized frame": `{"type":"stream","text":"` + strings.Repeat("x", 1<<17) + `"}`,
	} {
		t.Run("websocket "+name, func(t *testing.T) {
			up := websocket.Upgrader{}
			c := fake(t, func(w http.ResponseWriter, r *http.Request) {
				conn, err := up.Upgrade(w, r, nil)
				if err != nil {
					return
				}
				defer conn.Close()
				conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"kernel","seq":1,"state":"idle"}`))
				conn.WriteMessage(websocket.TextMessage, []byte(frame))
				conn.ReadMessage()
			})
			k, err := c.Connect(ctx, "s", client.ConnectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			if ev, err := k.Next(ctx); err != nil || ev.Type != client.EventKernel {
				t.Fatalf("first: %+v %v", ev, err)
			}
			_, err = k.Run(ctx, "1", client.RunOptions{})
			if !errors.Is(err, client.ErrProtocol) && !errors.Is(err, client.ErrClosed) {
				t.Fatalf("got %v", err)
			}
		})
	}
	t.Run("websocket refused with an API error", func(t *testing.T) {
		c := fake(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(404)
			w.Write([]byte(`{"error":{"code":"not_found","message":"session not found"}}`))
		})
		if _, err := c.Connect(ctx, "s", client.ConnectOptions{}); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("got %v", err)
		}
	})
}
