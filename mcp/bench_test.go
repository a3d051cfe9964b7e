package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/app/apptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkExecutePython measures an execute_python call of `x + 1` from
// the go-sdk's client over the gateway's /mcp (stateless streamable HTTP,
// in-process client behind it), local runtime.
func BenchmarkExecutePython(b *testing.B) {
	g := apptest.Start(b, apptest.Local(b), apptest.Options{})
	ctx := context.Background()
	c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, httpTransport(g.URL, apptest.KeyA), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "x = 41"}})
	if err != nil {
		b.Fatal(err)
	}
	sid := res.StructuredContent.(map[string]any)["session_id"]
	b.ResetTimer()
	for range b.N {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "x + 1", "session_id": sid}})
		if err != nil || !strings.Contains(textOf(res), "42") {
			b.Fatalf("%v %v", res, err)
		}
	}
}
