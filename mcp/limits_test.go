package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/mcp"
)

// TestCreateSessionSaysLimitsAreLowered: what create_session tells an
// agent about limits above the operator's maximum is what the gateway
// does with them. The gateway refuses only limits that Limits.Validate
// refuses, and a runtime's effective limits are Common.Limits of the
// request: above the maximum is lowered to it. So the tool's description
// and its limits field must say "lowers"/"lowered", never that such values
// are refused; if the behaviour changes to a refusal, the first half fails
// and the words must change with it.
func TestCreateSessionSaysLimitsAreLowered(t *testing.T) {
	maxL := sandbox.MaxLimits()
	over := sandbox.Limits{MemoryMB: maxL.MemoryMB * 2, CPUs: maxL.CPUs * 2, Pids: maxL.Pids * 2, WorkspaceMB: maxL.WorkspaceMB * 2}
	if err := over.Validate(); err != nil {
		t.Fatalf("limits above the maximum are refused (%v): create_session's description says they are lowered", err)
	}
	common := sandbox.Common{Defaults: sandbox.DefaultLimits(), Max: maxL}
	if got := common.Limits(over); got != maxL {
		t.Fatalf("limits above the maximum become %+v, not the maximum %+v: create_session's description says they are lowered", got, maxL)
	}

	_, cs := fakeSession(t, &fakeBackend{}, mcp.Config{})
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name != "create_session" {
			continue
		}
		if !strings.Contains(tool.Description, "lowers limits above its operator's maximum") {
			t.Errorf("create_session's description does not say limits above the maximum are lowered: %q", tool.Description)
		}
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var in struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(schema, &in); err != nil {
			t.Fatal(err)
		}
		limits := in.Properties["limits"].Description
		if !strings.Contains(limits, "above the operator's maximum are lowered to it") {
			t.Errorf("create_session's limits field does not say values above the maximum are lowered: %q", limits)
		}
		for _, text := range []string{tool.Description, limits} {
			if strings.Contains(text, "refuses limits above") || strings.Contains(text, "refuses values above") {
				t.Errorf("create_session says limits above the maximum are refused: %q", text)
			}
		}
		return
	}
	t.Fatal("no create_session tool")
}
