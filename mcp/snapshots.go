package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/glassroom/glassroom/client"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type snapshotInput struct {
	SessionID string `json:"session_id" jsonschema:"The session to capture (from an earlier answer)."`
	Name      string `json:"name,omitempty" jsonschema:"A label for the snapshot (1 to 128 of A-Z a-z 0-9 . _ -), to tell it apart later."`
}

// SnapshotOutput is snapshot_session's structured output.
type SnapshotOutput struct {
	SnapshotID string   `json:"snapshot_id" jsonschema:"pass it to create_session's snapshot to start a session from it"`
	Captured   []string `json:"captured" jsonschema:"the variables captured, as language:name"`
	Uncaptured []string `json:"uncaptured" jsonschema:"what could not be captured, as language:name (reason); language:* means none of that language's variables"`
	SizeBytes  int64    `json:"size_bytes"`
}

type forkInput struct {
	SessionID string `json:"session_id" jsonschema:"The session to fork (from an earlier answer)."`
	Count     int    `json:"count,omitempty" jsonschema:"How many copies to start (default 1, at most 8)."`
}

// ForkOutput is fork_session's structured output.
type ForkOutput struct {
	SessionIDs []string `json:"session_ids" jsonschema:"the new sessions, each an independent copy of the source's variables and files"`
	Errors     []string `json:"errors" jsonschema:"why the forks that failed did"`
}

// registerSnapshots adds snapshot_session and fork_session.
func (t *tools) registerSnapshots(s *sdk.Server) {
	sdk.AddTool(s, &sdk.Tool{
		Name:  "snapshot_session",
		Title: "Snapshot a session",
		Description: "Capture a session's state: its workspace files and its kernels' variables (Python's by value: DataFrames, models, " +
			"functions and classes; R's global environment; bash's variables, functions and directory; JavaScript's are not captured). " +
			"The answer lists what was captured and what could not be (an open socket, a generator), and a snapshot_id: pass it to " +
			"create_session's snapshot to start a new session from that state later (the session itself goes on).",
		InputSchema: mustSchema[snapshotInput](),
		Annotations: &sdk.ToolAnnotations{Title: "Snapshot a session", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
	}, t.snapshot)
	schema := mustSchema[forkInput]()
	schema.Properties["count"].Minimum = jsonschema.Ptr(1.0)
	schema.Properties["count"].Maximum = jsonschema.Ptr(8.0)
	sdk.AddTool(s, &sdk.Tool{
		Name:  "fork_session",
		Title: "Fork a session",
		Description: "Start independent copies of a session, variables and files included: try several approaches from the same state " +
			"and keep the one that works. Each copy is a session of its own (its session_id in the answer): a change in one is not seen " +
			"in the others or in the source, which goes on. Close the copies you do not keep.",
		InputSchema: schema,
		Annotations: &sdk.ToolAnnotations{Title: "Fork a session", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
	}, t.fork)
}

func (t *tools) snapshot(ctx context.Context, _ *sdk.CallToolRequest, in snapshotInput) (*sdk.CallToolResult, *SnapshotOutput, error) {
	if err := needSession(in.SessionID); err != nil {
		return nil, nil, err
	}
	snap, err := t.b.CreateSnapshot(ctx, in.SessionID, strings.TrimSpace(in.Name))
	if err != nil {
		return nil, nil, explainSnapshot(err, in.SessionID)
	}
	out := &SnapshotOutput{SnapshotID: snap.ID, SizeBytes: snap.SizeBytes, Captured: []string{}, Uncaptured: []string{}}
	for _, c := range snap.Contexts {
		lang := languageLabel(c.Language)
		for _, n := range c.Captured {
			out.Captured = append(out.Captured, lang+":"+n)
		}
		for _, u := range c.Uncaptured {
			out.Uncaptured = append(out.Uncaptured, fmt.Sprintf("%s:%s (%s)", lang, u.Name, u.Reason))
		}
	}
	text := fmt.Sprintf("Snapshot %s of session %s (%d bytes). Start a session from it with create_session and snapshot=%q.\nCaptured: %s",
		snap.ID, in.SessionID, snap.SizeBytes, snap.ID, listOrNone(out.Captured))
	if len(out.Uncaptured) > 0 {
		text += "\nNot captured: " + strings.Join(out.Uncaptured, "; ")
	}
	clipped, _ := clipHead(text, t.cfg.MaxTextChars-100)
	return textResult(clipped), out, nil
}

func (t *tools) fork(ctx context.Context, _ *sdk.CallToolRequest, in forkInput) (*sdk.CallToolResult, *ForkOutput, error) {
	if err := needSession(in.SessionID); err != nil {
		return nil, nil, err
	}
	count := in.Count
	if count == 0 {
		count = 1
	}
	forks, err := t.b.ForkSession(ctx, in.SessionID, count)
	if err != nil {
		return nil, nil, explainSnapshot(err, in.SessionID)
	}
	out := &ForkOutput{SessionIDs: []string{}, Errors: []string{}}
	for _, f := range forks {
		if f.Session == nil {
			if f.Error != nil {
				out.Errors = append(out.Errors, f.Error.Message)
			}
			continue
		}
		out.SessionIDs = append(out.SessionIDs, f.Session.ID)
		t.mu.Lock()
		t.created[f.Session.ID] = true
		t.mu.Unlock()
	}
	text := fmt.Sprintf("Forked session %s into %d new session(s): %s. Each has its own copy of the variables and files; close those you do not keep.",
		in.SessionID, len(out.SessionIDs), strings.Join(out.SessionIDs, ", "))
	if len(out.Errors) > 0 {
		text += "\nFailed: " + strings.Join(out.Errors, "; ")
	}
	return textResult(text), out, nil
}

// explainSnapshot words a snapshot's or a fork's refusal for the model.
func explainSnapshot(err error, sessionID string) error {
	var ae *client.APIError
	if errors.As(err, &ae) {
		switch ae.Code {
		case "no_snapshots":
			return errors.New("this gateway keeps no snapshots")
		case "snapshot_too_large", "too_many_snapshots":
			return fmt.Errorf("%s", ae.Message)
		}
	}
	return explain(err, sessionID, "")
}

// languageLabel is a kernel's short name for the model (python3: python).
func languageLabel(kernel string) string {
	if kernel == "python3" {
		return "python"
	}
	return kernel
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "(no variables)"
	}
	return strings.Join(names, ", ")
}

// restoreText says what a session started from a snapshot got of it.
func restoreText(r *client.RestoreReport) string {
	var b strings.Builder
	b.WriteString("From snapshot " + r.SnapshotID + ":")
	if r.Error != "" {
		b.WriteString(" " + r.Error + ".")
	}
	for _, c := range r.Contexts {
		lang := languageLabel(c.Language)
		switch {
		case c.Error != "":
			fmt.Fprintf(&b, " %s: %s.", lang, c.Error)
		default:
			fmt.Fprintf(&b, " %s: %d variables restored (%s).", lang, len(c.Restored), listOrNone(c.Restored))
		}
		for _, f := range c.Failed {
			fmt.Fprintf(&b, " %s:%s not restored (%s).", lang, f.Name, f.Reason)
		}
	}
	return b.String()
}
