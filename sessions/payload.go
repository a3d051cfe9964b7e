package sessions

import (
	"encoding/json"
)

// payloadEvent turns one execute_reply payload entry (kernel.ExecuteReply
// bounds them) into the /v1 event that stands for it: page, set_next_input
// or ask_exit. Other sources (edit_magic, ...) have none.
func payloadEvent(id string, raw json.RawMessage) (Event, bool) {
	var p struct {
		Source  string          `json:"source"`
		Data    json.RawMessage `json:"data"`
		Text    string          `json:"text"`
		Replace bool            `json:"replace"`
		Keep    bool            `json:"keepkernel"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return Event{}, false
	}
	switch p.Source {
	case "page":
		var bundle map[string]json.RawMessage
		if json.Unmarshal(p.Data, &bundle) != nil || len(bundle) == 0 {
			return Event{}, false
		}
		return Event{Type: EventPage, ID: id, Data: p.Data}, true
	case "set_next_input":
		return Event{Type: EventSetNextInput, ID: id, Text: p.Text, Replace: ptr(p.Replace)}, true
	case "ask_exit":
		return Event{Type: EventAskExit, ID: id, KeepKernel: ptr(p.Keep)}, true
	}
	return Event{}, false
}
