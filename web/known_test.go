package web

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/kernels"
)

// TestKnownKernelsMatchRegistry: the page's fallback table of kernels
// (languages.js KNOWN, used before GET /v1/kernels answers and for
// notebooks of a kernel the gateway does not run) says of each kernel
// what the gateway's registry says, and knows every kernel of it.
func TestKnownKernelsMatchRegistry(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node is required in CI: %v", err)
		}
		t.Skipf("\n\n*** SKIPPING: %v ***\n\n", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e",
		"import { knownTable } from './static/js/languages.js'; process.stdout.write(JSON.stringify(knownTable()))")
	cmd.Env = append(os.Environ(), "NODE_OPTIONS=", "NO_COLOR=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	type known struct {
		Kernel struct {
			Name        string   `json:"name"`
			Language    string   `json:"language"`
			DisplayName string   `json:"display_name"`
			Aliases     []string `json:"aliases"`
		} `json:"kernel"`
		Label string         `json:"label"`
		Mode  string         `json:"mode"`
		Info  map[string]any `json:"info"`
	}
	var table map[string]known
	if err := json.Unmarshal(out, &table); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	all := kernels.All()
	if len(table) != len(all) {
		t.Errorf("KNOWN has %d kernels, the registry %d", len(table), len(all))
	}
	for _, k := range all {
		got, ok := table[k.Name]
		if !ok {
			t.Errorf("KNOWN lacks %s", k.Name)
			continue
		}
		li, _ := json.Marshal(k.Language)
		var want map[string]any
		_ = json.Unmarshal(li, &want)
		if got.Kernel.Name != k.Name || got.Kernel.Language != k.Language.Name || got.Kernel.DisplayName != k.DisplayName ||
			!reflect.DeepEqual(got.Kernel.Aliases, k.Aliases) || got.Label != k.Label || got.Mode != k.EditorMode ||
			!reflect.DeepEqual(got.Info, want) {
			t.Errorf("KNOWN[%s] = %+v\nregistry: %+v %+v", k.Name, got, k, want)
		}
	}
}
