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
