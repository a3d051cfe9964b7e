package main

import (
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestGatewayRestartKeepsTemplateMetadataLifetime: a session made from a
// --templates file's template, with metadata and a lifetime set by PATCH,
// and private previews, comes back from a SIGKILL of its gateway (the
// durable store) with the same template, metadata, end_at and private
// previews (its traffic token the same), and the filter still finds it.
func TestGatewayRestartKeepsTemplateMetadataLifetime(t *testing.T) {
	file := filepath.Join(t.TempDir(), "templates.json")
	if err := os.WriteFile(file, []byte(`{"analysis": {"language": "python3", "limits": {"memory_mb": 900}, "env": {"TEMPLATE_ENV": "1"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	g := newDurableGateway(t, "--templates", file)
	type info struct {
		ID       string
		Template string
		Metadata map[string]string
		EndAt    time.Time `json:"end_at"`
		Private  bool      `json:"private_previews"`
		Traffic  string    `json:"traffic_access_token"`
		Limits   struct {
			MemoryMB int `json:"memory_mb"`
		}
	}
	var s info
	if st := api(t, g.base, g.key, "POST", "/v1/sessions", map[string]any{"template": "analysis", "metadata": map[string]string{"owner": "ada"}, "lifetime_s": 3600, "private_previews": true}, &s); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	if s.Template != "analysis" || s.Limits.MemoryMB != 900 || s.Metadata["owner"] != "ada" || !s.Private || s.Traffic == "" {
		t.Fatalf("created %+v", s)
	}
	var patched info
	if st := api(t, g.base, g.key, "PATCH", "/v1/sessions/"+s.ID, map[string]any{"lifetime_s": 1800}, &patched); st != http.StatusOK || !patched.EndAt.Before(s.EndAt) {
		t.Fatalf("PATCH lifetime_s: %d %+v", st, patched)
	}
	g.stop(syscall.SIGKILL)
	g.start()
	var back info
	if st := api(t, g.base, g.key, "GET", "/v1/sessions/"+s.ID, nil, &back); st != http.StatusOK {
		t.Fatalf("after a restart: %d", st)
	}
	if back.Template != "analysis" || back.Metadata["owner"] != "ada" || !back.EndAt.Equal(patched.EndAt) || !back.Private || back.Traffic != s.Traffic {
		t.Errorf("after a restart: %+v, want template analysis, owner ada, end_at %v, private previews", back, patched.EndAt)
	}
	var list struct{ Sessions []info }
	if api(t, g.base, g.key, "GET", "/v1/sessions?metadata.owner=ada", nil, &list); len(list.Sessions) != 1 {
		t.Errorf("the filter after a restart: %+v", list)
	}
}
