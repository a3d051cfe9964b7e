package kernel

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"time"
)

// ProtocolVersion is the Jupyter messaging protocol version this package speaks.
const ProtocolVersion = "5.3"

// delimiter separates routing identities from the signed message frames.
var delimiter = []byte("<IDS|MSG>")

// Header is a Jupyter message header (also used as parent_header).
type Header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
}

// Message is one decoded Jupyter message.
type Message struct {
	Identities [][]byte
	Header     Header
	// Parent is the zero Header when the message has no parent.
	Parent   Header
	Metadata json.RawMessage
	Content  json.RawMessage
	Buffers  [][]byte

	// order is a side message's iopub number (outputOrder; 0 when it was
	// not numbered).
	order int64
}

// Errors returned by Decode. A message that fails to decode must be dropped.
var (
	ErrBadSignature = errors.New("kernel: bad message signature")
	ErrMalformed    = errors.New("kernel: malformed message")
)

// Codec encodes and decodes signed Jupyter messages with HMAC-SHA256.
// A Codec is immutable and safe for concurrent use.
type Codec struct {
	key []byte
}

// NewCodec returns a codec that signs with key. The key must not be empty:
// an unsigned channel would let anything that reaches the socket act as the
// kernel.
func NewCodec(key []byte) (*Codec, error) {
	if len(key) == 0 {
		return nil, fmt.Errorf("kernel: new codec: %w", ErrEmptyKey)
	}
	return &Codec{key: bytes.Clone(key)}, nil
}

// ErrEmptyKey is returned when a connection has no HMAC key.
var ErrEmptyKey = errors.New("empty HMAC key")

func (c *Codec) mac() hash.Hash { return hmac.New(sha256.New, c.key) }

func (c *Codec) sign(parts ...[]byte) []byte {
	m := c.mac()
	for _, p := range parts {
		m.Write(p)
	}
	sum := m.Sum(nil)
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum)
	return out
}

// Encode returns the multipart frames of msg, signed.
func (c *Codec) Encode(msg *Message) ([][]byte, error) {
	header, err := json.Marshal(msg.Header)
	if err != nil {
		return nil, fmt.Errorf("kernel: encode header: %w", err)
	}
	parent := []byte("{}")
	if msg.Parent.MsgID != "" {
		if parent, err = json.Marshal(msg.Parent); err != nil {
			return nil, fmt.Errorf("kernel: encode parent: %w", err)
		}
	}
	metadata := nonEmptyJSON(msg.Metadata)
	content := nonEmptyJSON(msg.Content)
	frames := make([][]byte, 0, len(msg.Identities)+6+len(msg.Buffers))
	frames = append(frames, msg.Identities...)
	frames = append(frames, delimiter, c.sign(header, parent, metadata, content), header, parent, metadata, content)
	frames = append(frames, msg.Buffers...)
	return frames, nil
}

func nonEmptyJSON(b json.RawMessage) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}

// Decode parses and verifies frames. The signature is checked in constant
// time before any JSON is parsed; a message with a missing or wrong
// signature returns ErrBadSignature.
func (c *Codec) Decode(frames [][]byte) (*Message, error) {
	idx := -1
	for i, f := range frames {
		if bytes.Equal(f, delimiter) {
			idx = i
			break
		}
	}
	if idx < 0 || len(frames) < idx+6 {
		return nil, fmt.Errorf("%w: missing delimiter or frames", ErrMalformed)
	}
	sig := frames[idx+1]
	header, parent, metadata, content := frames[idx+2], frames[idx+3], frames[idx+4], frames[idx+5]
	if !hmac.Equal(sig, c.sign(header, parent, metadata, content)) {
		return nil, ErrBadSignature
	}
	msg := &Message{Identities: frames[:idx], Metadata: metadata, Content: content}
	if len(frames) > idx+6 {
		msg.Buffers = frames[idx+6:]
	}
	if err := json.Unmarshal(header, &msg.Header); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrMalformed, err)
	}
	if msg.Header.MsgID == "" || msg.Header.MsgType == "" {
		return nil, fmt.Errorf("%w: header lacks msg_id or msg_type", ErrMalformed)
	}
	if err := json.Unmarshal(parent, &msg.Parent); err != nil {
		return nil, fmt.Errorf("%w: parent_header: %w", ErrMalformed, err)
	}
	if !json.Valid(metadata) || !json.Valid(content) {
		return nil, fmt.Errorf("%w: metadata or content is not JSON", ErrMalformed)
	}
	return msg, nil
}

// newID returns a random 128-bit identifier in hex.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("kernel: crypto/rand failed: %v", err)) // rand.Read never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

// newHeader builds a header for a new message of msgType in session.
func newHeader(session, msgType string) Header {
	return Header{
		MsgID:    newID(),
		Session:  session,
		Username: "glassroom",
		Date:     time.Now().UTC().Format(time.RFC3339Nano),
		MsgType:  msgType,
		Version:  ProtocolVersion,
	}
}
