package kernel

import (
	"encoding/json"
	"strings"
	"testing"
)

func eventOf(t testing.TB, msgType, content string) (Event, bool, error) {
	t.Helper()
	return decodeEvent(&Message{Header: Header{MsgType: msgType}, Content: json.RawMessage(content)})
}

func TestDecodeEventShapes(t *testing.T) {
	ev, ok, err := eventOf(t, "display_data", `{"data": {"text/plain": "a \"}\" b", "image/png": "iVBO"}, "metadata": {"k": [1, {"x": "}"}]}, "transient": {"display_id": "d1"}, "padding": "`+strings.Repeat("p", 1<<20)+`"}`)
	if err != nil || !ok || string(ev.Data["text/plain"]) != `"a \"}\" b"` || string(ev.Data["image/png"]) != `"iVBO"` || ev.DisplayID != "d1" || string(ev.Metadata) != `{"k": [1, {"x": "}"}]}` {
		t.Fatalf("display: %+v %v", ev, err)
	}
	// What the event holds is what it reports: the unknown 1 MiB padding
	// is neither kept nor counted.
	if ev.Size() > 4096 || cap(ev.DataJSON) > 1024 {
		t.Fatalf("event holds %d bytes (DataJSON cap %d) of a 1 MiB message", ev.Size(), cap(ev.DataJSON))
	}
	var many strings.Builder
	many.WriteString(`{"data": {`)
	for i := 0; i < 1000; i++ {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"k` + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + `": ""`)
	}
	many.WriteString(`}}`)
	ev, _, err = eventOf(t, "execute_result", many.String())
	if err != nil || len(ev.Data) > MaxBundleEntries || !ev.Truncated || ev.DataJSON != nil {
		t.Fatalf("1000-key bundle: %d keys, truncated %v, %v", len(ev.Data), ev.Truncated, err)
	}
	ev, _, err = eventOf(t, "error", `{"ename": "E", "evalue": "v", "traceback": [`+strings.Repeat(`"",`, 100000)+`""]}`)
	if err != nil || len(ev.Traceback) != MaxTracebackEntries || !ev.Truncated {
		t.Fatalf("100001 empty entries: kept %d, truncated %v, %v", len(ev.Traceback), ev.Truncated, err)
	}
	if _, _, err := eventOf(t, "stream", `{"name": "stdwhat", "text": "x"}`); err == nil {
		t.Fatal("bad stream name accepted")
	}
	if _, _, err := eventOf(t, "stream", `["not", "an", "object"]`); err == nil {
		t.Fatal("array content accepted")
	}
	ev, _, err = eventOf(t, "stream", `{"name":"stdout","text":"caf\u00e9 \n"}`)
	if err != nil || ev.Text != "café \n" {
		t.Fatalf("escaped text: %q %v", ev.Text, err)
	}
}

// FuzzDecodeEvent: any valid JSON content decodes or fails cleanly, and a
// decoded event never holds more than its lists' bounds allow.
func FuzzDecodeEvent(f *testing.F) {
	f.Add("display_data", `{"data": {"text/plain": "x"}, "metadata": {}}`)
	f.Add("error", `{"ename": "E", "traceback": ["a", "b"]}`)
	f.Add("stream", `{"name": "stdout", "text": "hi"}`)
	f.Fuzz(func(t *testing.T, msgType, content string) {
		if !json.Valid([]byte(content)) {
			return
		}
		ev, ok, err := eventOf(t, msgType, content)
		if err != nil || !ok {
			return
		}
		if len(ev.Data) > MaxBundleEntries || len(ev.Traceback) > MaxTracebackEntries {
			t.Fatalf("bounds exceeded: %d keys, %d entries", len(ev.Data), len(ev.Traceback))
		}
		if ev.DataJSON != nil && !json.Valid(ev.DataJSON) {
			t.Fatalf("DataJSON not JSON: %q", ev.DataJSON)
		}
	})
}
