package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type completion struct {
	Matches     []string `json:"matches"`
	CursorStart int      `json:"cursor_start"`
	CursorEnd   int      `json:"cursor_end"`
}

// applyCompletion replaces code's [start, end) code points with match.
func applyCompletion(code string, c completion, match string) string {
	r := []rune(code)
	return string(r[:c.CursorStart]) + match + string(r[c.CursorEnd:])
}

// introspection checks complete and inspect over REST and the WebSocket,
// including while the kernel is busy with a cell.
func introspection(t *testing.T, e *env, id string) {
	code := "import collections; collections.Ord"
	var c completion
	if st := e.call(keyA, "POST", "/v1/sessions/"+id+"/complete", map[string]any{"code": code, "cursor_pos": utf8.RuneCountInString(code)}, &c); st != http.StatusOK {
		t.Fatalf("complete: %d", st)
	}
	found := false
	for _, m := range c.Matches {
		found = found || strings.HasSuffix(applyCompletion(code, c, m), "collections.OrderedDict")
	}
	if !found {
		t.Fatalf("no OrderedDict completion: %+v", c)
	}

	// Cursor positions are code points, not bytes: a name with non-ASCII
	// letters completes correctly.
	e.exec(keyA, id, "ünïcode_vär = 1", 0)
	code = "x = ünïcode_v"
	if st := e.call(keyA, "POST", "/v1/sessions/"+id+"/complete", map[string]any{"code": code, "cursor_pos": utf8.RuneCountInString(code)}, &c); st != http.StatusOK {
		t.Fatalf("complete: %d", st)
	}
	if len(c.Matches) == 0 || applyCompletion(code, c, c.Matches[0]) != "x = ünïcode_vär" {
		t.Fatalf("unicode completion: %+v", c)
	}
	var bad apiErr
	if st := e.call(keyA, "POST", "/v1/sessions/"+id+"/complete", map[string]any{"code": "abc", "cursor_pos": 4}, &bad); st != http.StatusBadRequest || !strings.Contains(bad.Error.Message, "cursor_pos") {
		t.Fatalf("cursor past the end: %d %+v", st, bad)
	}

	var ins struct {
		Found bool              `json:"found"`
		Data  map[string]string `json:"data"`
	}
	if st := e.call(keyA, "POST", "/v1/sessions/"+id+"/inspect", map[string]any{"code": "len(", "cursor_pos": 4}, &ins); st != http.StatusOK {
		t.Fatalf("inspect: %d", st)
	}
	if !ins.Found || !strings.Contains(ins.Data["text/plain"], "number of items") {
		t.Fatalf("inspect len(: %+v", ins)
	}

	// Over the WebSocket, while a cell runs: the connection keeps relaying
	// the cell's output and the replies come when the kernel is free.
	w := e.ws(keyA, id, "")
	w.send(map[string]any{"type": "execute", "id": "busy", "code": "import time\nprint('working', flush=True)\ntime.sleep(1)\nprint('finished')"})
	w.until(func(ev frame) bool { return ev.Type == "stream" && ev.ID == "busy" })
	w.send(map[string]any{"type": "complete", "id": "c1", "code": "import collections; collections.Ord", "cursor_pos": 35})
	w.send(map[string]any{"type": "inspect", "id": "i1", "code": "len(", "cursor_pos": 4, "detail_level": 0})
	var raw []json.RawMessage
	w.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	gotC, gotI, done := false, false, false
	for !gotC || !gotI || !done {
		var m json.RawMessage
		if err := w.conn.ReadJSON(&m); err != nil {
			t.Fatalf("ws read: %v after %s", err, raw)
		}
		raw = append(raw, m)
		var f struct {
			Type    string            `json:"type"`
			ID      string            `json:"id"`
			Matches []string          `json:"matches"`
			Found   bool              `json:"found"`
			Data    map[string]string `json:"data"`
		}
		json.Unmarshal(m, &f)
		switch {
		case f.Type == "complete_reply" && f.ID == "c1":
			gotC = len(f.Matches) > 0
		case f.Type == "inspect_reply" && f.ID == "i1":
			gotI = f.Found && strings.Contains(f.Data["text/plain"], "number of items")
		case f.Type == "done" && f.ID == "busy":
			done = true
		case f.Type == "rejected":
			t.Fatalf("rejected: %s", m)
		}
	}
	w.send(map[string]any{"type": "complete", "id": "c2", "code": "x"})
	if r := w.until(func(ev frame) bool { return ev.Type == "rejected" }); r[len(r)-1].ID != "c2" || r[len(r)-1].Code != "bad_frame" {
		t.Fatalf("complete without cursor_pos: %+v", r[len(r)-1])
	}
}
