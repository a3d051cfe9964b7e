package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/glassroom/glassroom/client"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type previewInput struct {
	SessionID string `json:"session_id" jsonschema:"The session whose sandbox runs the server (from an earlier answer)."`
	Port      int    `json:"port" jsonschema:"The TCP port the server listens on inside the sandbox (bound to 0.0.0.0 or 127.0.0.1)."`
}

// PreviewOutput is preview_port's structured output.
type PreviewOutput struct {
	URL       string `json:"url" jsonschema:"opens the server in a browser, without any key; give it to the user"`
	Host      string `json:"host" jsonschema:"the preview's host name, which works by itself until the session ends"`
	ExpiresAt string `json:"expires_at" jsonschema:"when url stops working (RFC 3339); it also ends with the session"`
	Listening bool   `json:"listening" jsonschema:"whether something listens on the port now"`
}

// registerPreview adds preview_port.
func (t *tools) registerPreview(s *sdk.Server) {
	schema := mustSchema[previewInput]()
	schema.Properties["port"].Minimum = jsonschema.Ptr(1.0)
	schema.Properties["port"].Maximum = jsonschema.Ptr(65535.0)
	sdk.AddTool(s, &sdk.Tool{
		Name:  "preview_port",
		Title: "Open a server of the sandbox in a browser",
		Description: "Get a URL that opens a server running in the session's sandbox (a web app or dev server you started with " +
			"run_command and background: true: Flask, http.server, Vite, Streamlit) in a browser. Give the user the url: it works " +
			"without any key, WebSockets included, on an origin of its own, until expires_at (an hour) or the session's end. The " +
			"server must listen on 0.0.0.0 or 127.0.0.1 in the sandbox.",
		InputSchema: schema,
		Annotations: &sdk.ToolAnnotations{Title: "Open a server of the sandbox in a browser", ReadOnlyHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, t.preview)
}

func (t *tools) preview(ctx context.Context, _ *sdk.CallToolRequest, in previewInput) (*sdk.CallToolResult, *PreviewOutput, error) {
	if err := needSession(in.SessionID); err != nil {
		return nil, nil, err
	}
	p, err := t.b.Preview(ctx, in.SessionID, in.Port, 0)
	if err != nil {
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Code == "no_previews" {
			return nil, nil, errors.New("this gateway serves no previews (its operator starts it with --preview-listen)")
		}
		return nil, nil, explain(err, in.SessionID, "")
	}
	ports, _ := t.b.Ports(ctx, in.SessionID)
	listening := slices.ContainsFunc(ports, func(pt client.Port) bool { return pt.Port == in.Port })
	out := &PreviewOutput{URL: p.URL, Host: p.Host, ExpiresAt: p.ExpiresAt.Format(time.RFC3339), Listening: listening}
	text := fmt.Sprintf("Preview of port %d of session %s: %s\n(works until %s or the session's end; give this URL to the user)",
		in.Port, in.SessionID, p.URL, out.ExpiresAt)
	if !listening {
		text += fmt.Sprintf("\nNothing listens on port %d yet: start the server (run_command with background: true, bound to 0.0.0.0), "+
			"then open the URL.", in.Port)
	}
	return textResult(text), out, nil
}
