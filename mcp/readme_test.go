package mcp_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// headers adds fixed headers to every request.
type headers struct {
	h    map[string]string
	base http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// TestReadmeConfig runs the MCP config blocks of docs/clients.md (stdio
// and HTTP), with the test gateway's URL and key, so the documentation
// stays true. Each block of the README must be one of them.
func TestReadmeConfig(t *testing.T) {
	re := regexp.MustCompile("(?s)```json\n(\\{\\s*\"mcpServers\".*?)```")
	doc, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := re.FindAllSubmatch(doc, -1)
	if len(blocks) != 2 {
		t.Fatalf("want 2 mcpServers blocks in docs/clients.md, found %d", len(blocks))
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range re.FindAllSubmatch(readme, -1) {
		if !bytes.Equal(r[1], blocks[0][1]) && !bytes.Equal(r[1], blocks[1][1]) {
			t.Fatalf("README's mcpServers block is not one of docs/clients.md's:\n%s", r[1])
		}
	}
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	ctx := ctxT(t, 2*time.Minute)
	const placeholder = "3f9c…"
	for _, b := range blocks {
		var cfg struct {
			MCPServers map[string]struct {
				Command, Type, URL string
				Args               []string
				Env, Headers       map[string]string
			} `json:"mcpServers"`
		}
		text := strings.ReplaceAll(string(b[1]), "http://127.0.0.1:8888", g.URL)
		text = strings.ReplaceAll(text, placeholder, apptest.KeyA)
		if err := json.Unmarshal([]byte(text), &cfg); err != nil {
			t.Fatalf("docs/clients.md block %s: %v", b[1], err)
		}
		s, ok := cfg.MCPServers["glassroom"]
		if !ok {
			t.Fatalf("no glassroom server in %s", text)
		}
		var transport sdk.Transport
		if s.Command != "" {
			cmd := exec.Command(binary, s.Args...) // the documented path is where users install it
			cmd.Env = os.Environ()
			for k, v := range s.Env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			cmd.Stderr = os.Stderr
			transport = &sdk.CommandTransport{Command: cmd}
		} else {
			if s.Type != "http" {
				t.Fatalf("unknown server type %q", s.Type)
			}
			transport = &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: headers{s.Headers, http.DefaultTransport}}}
		}
		cs := connect(t, ctx, transport)
		res := call(t, ctx, cs, "execute_python", map[string]any{"code": "6 * 7"})
		if res.IsError || !strings.Contains(textOf(res), "42") {
			t.Fatalf("docs/clients.md config %s: %q", text, textOf(res))
		}
		sid := res.StructuredContent.(map[string]any)["session_id"].(string)
		call(t, ctx, cs, "close_session", map[string]any{"session_id": sid})
	}
}
