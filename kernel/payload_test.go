package kernel

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPayloadAndUserExpressionBounds: what a kernel hands back beside an
// execute_reply's status is kept only when well-formed and within bounds;
// anything else is left out and reported as a cut.
func TestPayloadAndUserExpressionBounds(t *testing.T) {
	page := `{"source":"page","data":{"text/plain":"help"},"start":0}`
	many := "[" + strings.TrimSuffix(strings.Repeat(page+",", MaxPayloads+3), ",") + "]"
	big := `[{"source":"page","data":{"text/plain":"` + strings.Repeat("x", MaxPayloadBytes) + `"}}]`
	for _, c := range []struct {
		raw  string
		kept int
		cut  bool
	}{
		{"", 0, false}, {"null", 0, false}, {"[]", 0, false},
		{"[" + page + "]", 1, false},
		{`[1, "x", {"no":"source"}, ` + page + `]`, 1, true},
		{`{"source":"page"}`, 0, true},
		{many, MaxPayloads, true},
		{big, 0, true},
	} {
		kept, cut := decodePayload(json.RawMessage(c.raw))
		if len(kept) != c.kept || cut != c.cut {
			t.Errorf("payload %.60s: kept %d cut %v, want %d %v", c.raw, len(kept), cut, c.kept, c.cut)
		}
	}
	for _, c := range []struct {
		raw  string
		kept bool
		cut  bool
	}{
		{"", false, false}, {"{}", false, false}, {"null", false, false},
		{`{"a":{"status":"ok","data":{"text/plain":"2"}}}`, true, false},
		{`[1]`, false, true},
		{`{"a":"` + strings.Repeat("x", MaxUserExpressionsBytes) + `"}`, false, true},
	} {
		kept, cut := decodeUserExpressions(json.RawMessage(c.raw))
		if (kept != nil) != c.kept || cut != c.cut {
			t.Errorf("user_expressions %.60s: kept %v cut %v, want %v %v", c.raw, kept != nil, cut, c.kept, c.cut)
		}
	}
}

// TestSideQueueBounds: the side stream holds at most its count and bytes
// (a message larger than the byte bound still enters an empty queue), drops
// and counts the rest without waiting, and takes everything in order.
func TestSideQueueBounds(t *testing.T) {
	q := newSideQueue(3, 1000)
	msg := func(id string) *Message { return &Message{Header: Header{MsgID: id}} }
	if !q.push(msg("big"), 5000) {
		t.Fatal("an empty queue refused a large message")
	}
	if q.push(msg("x"), 10) || q.dropped != 1 {
		t.Fatalf("a queue over its bytes took more (dropped %d)", q.dropped)
	}
	if got := q.takeAll(nil); len(got) != 1 || got[0].Header.MsgID != "big" {
		t.Fatalf("took %v", got)
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		q.push(msg(id), 10)
	}
	got := q.takeAll(nil)
	if len(got) != 3 || got[0].Header.MsgID != "a" || got[2].Header.MsgID != "c" || q.dropped != 2 {
		t.Fatalf("took %d messages, dropped %d", len(got), q.dropped)
	}
	if isSide(Shell, &Message{Header: Header{MsgType: MsgCommMsg}}, false) || !isSide(IOPub, &Message{Header: Header{MsgType: MsgCommOpen}}, true) ||
		isSide(IOPub, &Message{Header: Header{MsgType: "stream"}}, true) || !isSide(IOPub, &Message{Header: Header{MsgType: "stream"}}, false) {
		t.Fatal("isSide routes wrongly")
	}
}
