package mcp_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEditToolIsSizedAndExplained: edit_file's answers fit the model's
// budget, and the gateway's refusals come back as what to do.
func TestEditToolIsSizedAndExplained(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	f := &fakeBackend{
		files: map[string][]byte{"big.py": []byte(strings.Repeat("     1\tx = 1\n", 2000))},
		editErrs: map[string]error{
			"blob.bin":  &client.APIError{Status: 422, Code: "not_text", Message: "not a UTF-8 text file: blob.bin: it has NUL bytes or invalid UTF-8"},
			"huge.txt":  &client.APIError{Status: 413, Code: "too_large", Message: "file too large to edit: huge.txt: it has 9.0 MiB"},
			"race.txt":  &client.APIError{Status: 409, Code: "file_changed", Message: "the file changed during the edit: race.txt: something else wrote it meanwhile"},
			"dup.txt":   &client.APIError{Status: 409, Code: "multiple_matches", Message: "old_str is not unique: dup.txt: 2 matches, at lines 1 and 3"},
			"range.txt": &client.APIError{Status: 400, Code: "bad_request", Message: "invalid edit: range.txt: insert_line 9 is out of range"},
		},
	}
	srv, cs := fakeSession(t, f, mcp.Config{MaxTextChars: 2000})
	r := call(t, ctx, cs, "edit_file", map[string]any{"session_id": "s", "command": "view", "path": "big.py"})
	if text := textOf(r); r.IsError || utf8.RuneCountInString(text) > 2000 || !strings.Contains(text, "[output truncated: view fewer lines with view_range]") {
		t.Errorf("a big view: %d chars, %q", utf8.RuneCountInString(text), text[max(0, len(text)-100):])
	}
	for path, want := range map[string]string{
		"blob.bin":  "use execute_python",
		"huge.txt":  "9.0 MiB. Use execute_python",
		"race.txt":  "something else wrote it",
		"dup.txt":   "2 matches, at lines 1 and 3. The file was not changed",
		"range.txt": "insert_line 9 is out of range",
	} {
		r := call(t, ctx, cs, "edit_file", map[string]any{"session_id": "s", "command": "str_replace", "path": path, "old_str": "a"})
		if !r.IsError || !strings.Contains(textOf(r), want) || strings.Contains(textOf(r), "the glassroom gateway answered") {
			t.Errorf("%s: %q, want it to say %q", path, textOf(r), want)
		}
	}
	if r := call(t, ctx, cs, "edit_file", map[string]any{"command": "insert", "path": "a.txt", "insert_line": 0, "new_str": "x"}); !r.IsError || !strings.Contains(textOf(r), "session_id is required") {
		t.Errorf("an insert without a session: %q", textOf(r))
	}
	if got := srv.CreatedSessions(); len(got) != 0 {
		t.Fatalf("a refused edit started a session: %v", got)
	}
	if r := call(t, ctx, cs, "edit_file", map[string]any{"command": "create", "path": "new.txt", "file_text": "hi\n"}); r.IsError || !strings.Contains(textOf(r), "Started a new Python session") {
		t.Errorf("a create without a session: %q", textOf(r))
	}
	if got := srv.CreatedSessions(); len(got) != 1 {
		t.Fatalf("create without session_id: sessions %v", got)
	}
	if r, err := cs.CallTool(ctx, callParams("edit_file", map[string]any{"session_id": "s", "command": "undo_edit", "path": "a.txt"})); err == nil && !r.IsError {
		t.Errorf("an unknown command was accepted: %q", textOf(r))
	}
}

func callParams(name string, args map[string]any) *sdk.CallToolParams {
	return &sdk.CallToolParams{Name: name, Arguments: args}
}
