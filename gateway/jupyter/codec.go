package jupyter

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// The framings of Jupyter messages on a kernel's channels WebSocket
// (jupyter_server's docs/developers/websocket-protocols.md):
//
//   - legacy, no subprotocol: a message without buffers is a JSON text
//     frame {"channel","header","parent_header","metadata","content",
//     "buffers":[]}; a message with buffers is a binary frame: a 4-byte
//     big-endian count n of parts, n 4-byte big-endian offsets (from the
//     frame's start), then the JSON (without "buffers") and the buffers.
//   - v1.kernel.websocket.jupyter.org: every message is a binary frame: an
//     8-byte little-endian count n of offsets, n 8-byte little-endian
//     offsets, then the channel name, header, parent_header, metadata and
//     content (each JSON) and the buffers; the last offset is the end.
//
// Messages are never signed on the WebSocket: glassroom signs toward the
// kernel (package kernel), and the signature fields are absent or empty.

// subprotocolV1 is the subprotocol name of the v1 framing.
const subprotocolV1 = "v1.kernel.websocket.jupyter.org"

// Bounds on a client's frame.
const (
	maxBuffers     = 64
	maxHeaderBytes = 16 << 10
)

var errBadFrame = errors.New("bad Jupyter frame")

// jmsg is one Jupyter message as the channels WebSocket carries it.
type jmsg struct {
	Channel  string
	Header   json.RawMessage
	Parent   json.RawMessage
	Metadata json.RawMessage
	Content  json.RawMessage
	Buffers  [][]byte
}

// jheader is the part of a header glassroom reads or writes.
type jheader struct {
	MsgID    string `json:"msg_id"`
	MsgType  string `json:"msg_type"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	Version  string `json:"version"`
}

// legacyJSON is a legacy text frame glassroom sends, and the JSON part of
// a binary one.
type legacyJSON struct {
	Channel  string          `json:"channel"`
	Header   json.RawMessage `json:"header"`
	Parent   json.RawMessage `json:"parent_header"`
	Metadata json.RawMessage `json:"metadata"`
	Content  json.RawMessage `json:"content"`
	// Copies of the header's, as jupyter_server sends them.
	MsgID   string    `json:"msg_id,omitempty"`
	MsgType string    `json:"msg_type,omitempty"`
	Buffers *[]string `json:"buffers,omitempty"`
}

// decodeFrame parses a client's frame. binary tells the WebSocket frame
// type; v1 whether the v1 subprotocol was selected. The message's JSON
// parts are checked to be JSON; their meaning is the caller's.
func decodeFrame(data []byte, binaryFrame, v1 bool) (*jmsg, error) {
	var m *jmsg
	var err error
	switch {
	case v1:
		if !binaryFrame {
			return nil, fmt.Errorf("%w: text frame on the %s subprotocol", errBadFrame, subprotocolV1)
		}
		m, err = decodeV1(data)
	case binaryFrame:
		m, err = decodeLegacyBinary(data)
	default:
		m, err = decodeLegacyJSON(data)
	}
	if err != nil {
		return nil, err
	}
	if len(m.Header) > maxHeaderBytes || len(m.Parent) > maxHeaderBytes {
		return nil, fmt.Errorf("%w: header over %d bytes", errBadFrame, maxHeaderBytes)
	}
	for _, part := range []*json.RawMessage{&m.Header, &m.Parent, &m.Metadata, &m.Content} {
		*part = bytes.TrimSpace(*part)
		if len(*part) == 0 || string(*part) == "null" {
			*part = json.RawMessage("{}")
		}
		if (*part)[0] != '{' || !json.Valid(*part) {
			return nil, fmt.Errorf("%w: header, parent_header, metadata and content must be JSON objects", errBadFrame)
		}
	}
	return m, nil
}

func decodeLegacyJSON(data []byte) (*jmsg, error) {
	var l struct { // other members (msg_id, msg_type, buffers) are ignored
		Channel  string          `json:"channel"`
		Header   json.RawMessage `json:"header"`
		Parent   json.RawMessage `json:"parent_header"`
		Metadata json.RawMessage `json:"metadata"`
		Content  json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadFrame, err)
	}
	return &jmsg{Channel: l.Channel, Header: l.Header, Parent: l.Parent, Metadata: l.Metadata, Content: l.Content}, nil
}

func decodeLegacyBinary(data []byte) (*jmsg, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("%w: binary frame of %d bytes", errBadFrame, len(data))
	}
	n := binary.BigEndian.Uint32(data)
	if n < 1 || n > maxBuffers+1 || uint64(len(data)) < 4*(uint64(n)+1) {
		return nil, fmt.Errorf("%w: %d parts", errBadFrame, n)
	}
	offsets := make([]int, n+1)
	for i := range int(n) {
		offsets[i] = int(binary.BigEndian.Uint32(data[4*(i+1):]))
	}
	offsets[n] = len(data)
	parts, err := split(data, offsets, 4*(int(n)+1))
	if err != nil {
		return nil, err
	}
	m, err := decodeLegacyJSON(parts[0])
	if err != nil {
		return nil, err
	}
	m.Buffers = parts[1:]
	return m, nil
}

func decodeV1(data []byte) (*jmsg, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("%w: binary frame of %d bytes", errBadFrame, len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	// channel, header, parent_header, metadata, content, buffers, end
	if n < 6 || n > maxBuffers+6 || uint64(len(data)) < 8*(n+1) {
		return nil, fmt.Errorf("%w: %d offsets", errBadFrame, n)
	}
	offsets := make([]int, n)
	for i := range int(n) {
		o := binary.LittleEndian.Uint64(data[8*(i+1):])
		if o > uint64(len(data)) {
			return nil, fmt.Errorf("%w: offset %d past the frame's end", errBadFrame, o)
		}
		offsets[i] = int(o)
	}
	parts, err := split(data, offsets, 8*(int(n)+1))
	if err != nil {
		return nil, err
	}
	return &jmsg{Channel: string(parts[0]), Header: parts[1], Parent: parts[2], Metadata: parts[3], Content: parts[4], Buffers: parts[5:]}, nil
}

// split cuts data at offsets (the last is the end), which must not go
// backwards, start before the table (of tableEnd bytes), or pass the end.
func split(data []byte, offsets []int, tableEnd int) ([][]byte, error) {
	parts := make([][]byte, 0, len(offsets)-1)
	for i := 0; i+1 < len(offsets); i++ {
		a, b := offsets[i], offsets[i+1]
		if a < tableEnd || b < a || b > len(data) {
			return nil, fmt.Errorf("%w: bad offsets", errBadFrame)
		}
		parts = append(parts, data[a:b])
	}
	return parts, nil
}

// outMsg is a message for a client, before its header is made.
type outMsg struct {
	channel  string
	msgType  string
	parent   json.RawMessage // the request's header; nil for none
	metadata json.RawMessage // nil for {}
	content  any             // marshalled with encoding/json
	buffers  [][]byte
	msgID    string // set when the caller must know it; else a new one
}

// formatDate formats t as Jupyter clients parse it (microseconds, UTC, Z).
func formatDate(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// msgIDs makes unique message ids: a random prefix per connection and a
// counter, as jupyter_client does. Safe for concurrent use.
type msgIDs struct {
	prefix string
	n      atomic.Uint64
}

func newMsgIDs() *msgIDs {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("jupyter: crypto/rand failed: %v", err))
	}
	return &msgIDs{prefix: hex.EncodeToString(b[:]) + "_"}
}

func (g *msgIDs) next() string { return g.prefix + strconv.FormatUint(g.n.Add(1), 10) }

// encode renders m for the client with a header glassroom makes (session
// is the kernel incarnation's id), in the framing the connection uses.
// It reports whether the frame is binary.
func encode(m *outMsg, msgID, session string, now time.Time, v1 bool) ([]byte, bool, error) {
	header, err := json.Marshal(jheader{MsgID: msgID, MsgType: m.msgType, Session: session, Username: "glassroom",
		Date: formatDate(now), Version: "5.3"})
	if err != nil {
		return nil, false, err
	}
	content, err := json.Marshal(m.content)
	if err != nil {
		return nil, false, fmt.Errorf("jupyter: encode %s: %w", m.msgType, err)
	}
	parent, metadata := m.parent, m.metadata
	if len(parent) == 0 {
		parent = json.RawMessage("{}")
	}
	if len(metadata) == 0 {
		metadata = json.RawMessage("{}")
	}
	if v1 {
		return encodeV1(m.channel, [][]byte{header, parent, metadata, content}, m.buffers), true, nil
	}
	l := legacyJSON{Channel: m.channel, Header: header, Parent: parent, Metadata: metadata, Content: content,
		MsgID: msgID, MsgType: m.msgType}
	if len(m.buffers) == 0 {
		l.Buffers = &[]string{}
		b, err := json.Marshal(l)
		return b, false, err
	}
	js, err := json.Marshal(l)
	if err != nil {
		return nil, false, err
	}
	return encodeLegacyBinary(js, m.buffers), true, nil
}

func encodeV1(channel string, parts [][]byte, buffers [][]byte) []byte {
	all := append(append([][]byte{[]byte(channel)}, parts...), buffers...)
	n := len(all) + 1 // the offsets of every part, and the end
	size := 8 * (n + 1)
	for _, p := range all {
		size += len(p)
	}
	out := make([]byte, 8*(n+1), size)
	binary.LittleEndian.PutUint64(out, uint64(n))
	off := 8 * (n + 1)
	for i, p := range all {
		binary.LittleEndian.PutUint64(out[8*(i+1):], uint64(off))
		off += len(p)
	}
	binary.LittleEndian.PutUint64(out[8*n:], uint64(off))
	for _, p := range all {
		out = append(out, p...)
	}
	return out
}

func encodeLegacyBinary(js []byte, buffers [][]byte) []byte {
	all := append([][]byte{js}, buffers...)
	n := len(all)
	size := 4 * (n + 1)
	for _, p := range all {
		size += len(p)
	}
	out := make([]byte, 4*(n+1), size)
	binary.BigEndian.PutUint32(out, uint32(n))
	off := 4 * (n + 1)
	for i, p := range all {
		binary.BigEndian.PutUint32(out[4*(i+1):], uint32(off))
		off += len(p)
	}
	for _, p := range all {
		out = append(out, p...)
	}
	return out
}

// readHeader extracts the fields glassroom uses from a client's header.
// Strings a client chooses are bounded and must be printable UTF-8.
func readHeader(raw json.RawMessage) (jheader, error) {
	var h jheader
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, fmt.Errorf("%w: header: %w", errBadFrame, err)
	}
	if h.MsgType == "" || len(h.MsgType) > 128 || !printable(h.MsgType) {
		return h, fmt.Errorf("%w: header needs a msg_type", errBadFrame)
	}
	if len(h.MsgID) > 256 || len(h.Session) > 256 {
		return h, fmt.Errorf("%w: msg_id or session over 256 bytes", errBadFrame)
	}
	return h, nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
