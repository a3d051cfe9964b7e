package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func testCodec(t testing.TB) *Codec {
	c, err := NewCodec([]byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCodecRoundTrip(t *testing.T) {
	c := testCodec(t)
	in := &Message{
		Identities: [][]byte{[]byte("id1")},
		Header:     newHeader("s", "execute_request"),
		Parent:     newHeader("s", "x"),
		Content:    []byte(`{"code":"1"}`),
		Buffers:    [][]byte{{0, 1, 2}},
	}
	frames, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Decode(frames)
	if err != nil {
		t.Fatal(err)
	}
	if out.Header != in.Header || out.Parent != in.Parent || string(out.Content) != `{"code":"1"}` ||
		len(out.Buffers) != 1 || !bytes.Equal(out.Identities[0], []byte("id1")) || string(out.Metadata) != "{}" {
		t.Fatalf("round trip mismatch: %+v", out)
	}
}

func TestCodecRejectsForgeries(t *testing.T) {
	c := testCodec(t)
	good, err := c.Encode(&Message{Header: newHeader("s", "stream"), Content: []byte(`{"name":"stdout","text":"hi"}`)})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewCodec([]byte("other key"))
	forgedByOtherKey, _ := other.Encode(&Message{Header: newHeader("s", "stream"), Content: []byte(`{}`)})
	tamper := func(i int, v string) [][]byte {
		f := make([][]byte, len(good))
		copy(f, good)
		f[i] = []byte(v)
		return f
	}
	cases := map[string][][]byte{
		"unsigned":        tamper(1, ""),
		"wrong signature": tamper(1, "00"+string(good[1][2:])),
		"content changed": tamper(5, `{"name":"stdout","text":"evil"}`),
		"other key":       forgedByOtherKey,
	}
	for name, frames := range cases {
		if _, err := c.Decode(frames); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: want ErrBadSignature, got %v", name, err)
		}
	}
	for name, frames := range map[string][][]byte{
		"no delimiter": {[]byte("a"), []byte("b")},
		"too short":    good[:4],
		"empty":        nil,
	} {
		if _, err := c.Decode(frames); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: want ErrMalformed, got %v", name, err)
		}
	}
	// A correctly signed message whose JSON is broken is malformed, not trusted.
	bad := [][]byte{delimiter, c.sign([]byte("{"), []byte("{}"), []byte("{}"), []byte("{}")), []byte("{"), []byte("{}"), []byte("{}"), []byte("{}")}
	if _, err := c.Decode(bad); !errors.Is(err, ErrMalformed) {
		t.Errorf("signed garbage: want ErrMalformed, got %v", err)
	}
	if _, err := NewCodec(nil); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("empty key accepted: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	c, _ := NewCodec([]byte("secret"))
	good, _ := c.Encode(&Message{Header: newHeader("s", "status"), Content: []byte(`{"execution_state":"idle"}`)})
	f.Add(bytes.Join(good, []byte{0}))
	f.Add([]byte("<IDS|MSG>\x00sig\x00{}\x00{}\x00{}\x00{}"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		frames := bytes.Split(data, []byte{0})
		msg, err := c.Decode(frames)
		if err == nil {
			// Anything accepted must have been signed with the key.
			if msg.Header.MsgID == "" {
				t.Fatalf("accepted message without msg_id")
			}
			if _, ok, err := decodeEvent(msg); ok && err != nil {
				t.Fatalf("decodeEvent: ok with error %v", err)
			}
		}
		// Re-signing the fuzzed frames must round-trip through Decode.
		if len(frames) >= 4 {
			m := &Message{Header: newHeader("s", "stream"), Content: frames[len(frames)-1]}
			enc, err := c.Encode(m)
			if err != nil {
				return
			}
			if json := frames[len(frames)-1]; len(json) > 0 {
				if _, err := c.Decode(enc); err != nil && !errors.Is(err, ErrMalformed) {
					t.Fatalf("own encoding rejected: %v", err)
				}
			}
		}
	})
}

func frameHeader(flags byte, size uint64) []byte {
	if size > 255 {
		b := make([]byte, 9)
		b[0] = flags | flagLong
		binary.BigEndian.PutUint64(b[1:], size)
		return b
	}
	return []byte{flags, byte(size)}
}

func TestGuardRejectsHugeFrames(t *testing.T) {
	greeting := make([]byte, 64)
	small := append(frameHeader(flagMore, 3), "abc"...)
	huge := frameHeader(0, 1<<62)
	for name, tc := range map[string]struct {
		stream []byte
		ok     bool
	}{
		"small frames":         {append(append(append([]byte{}, greeting...), small...), append(frameHeader(0, 300), make([]byte, 300)...)...), true},
		"declared 2^62 bytes":  {append(append([]byte{}, greeting...), huge...), false},
		"frame at the ceiling": {append(append([]byte{}, greeting...), frameHeader(flagMore, MaxFrameBytes)...), true},
	} {
		t.Run(name, func(t *testing.T) {
			g := newGuardConn(nil)
			err := g.scan(tc.stream)
			if (err == nil) != tc.ok {
				t.Fatalf("scan: %v, want ok=%v", err, tc.ok)
			}
		})
	}
	// Endless empty frames of one message hit the frame-count limit.
	g0 := newGuardConn(nil)
	g0.scan(make([]byte, 64))
	var ferr error
	for i := 0; i <= MaxFramesPerMessage && ferr == nil; i++ {
		ferr = g0.scan(frameHeader(flagMore, 0))
	}
	if !errors.Is(ferr, ErrFrameTooLarge) {
		t.Fatalf("empty-frame flood not stopped: %v", ferr)
	}
	// A message that ends resets the count.
	g1 := newGuardConn(nil)
	g1.scan(make([]byte, 64))
	for i := 0; i < 3*MaxFramesPerMessage; i++ {
		if err := g1.scan(frameHeader(0, 0)); err != nil {
			t.Fatalf("single-frame messages rejected: %v", err)
		}
	}
	// Many frames of one message, each under the frame limit, still hit the message limit.
	g := newGuardConn(nil)
	if err := g.scan(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	var err error
	for i := 0; i < 3 && err == nil; i++ {
		err = g.scan(frameHeader(flagMore, MaxFrameBytes))
		g.bodyLeft, g.state = 0, stFlags // pretend the body passed
	}
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("message ceiling not enforced: %v", err)
	}
}

func TestGuardedDialRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.sock")
	l, err := net.Listen("unix", real)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "k-1")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckSocket(link); !errors.Is(err, ErrSymlink) {
		t.Fatalf("symlink to a socket: want ErrSymlink, got %v", err)
	}
	regular := filepath.Join(dir, "k-2")
	os.WriteFile(regular, nil, 0o600)
	if err := CheckSocket(regular); !errors.Is(err, ErrSymlink) {
		t.Fatalf("regular file: want ErrSymlink, got %v", err)
	}
	if err := CheckSocket(real); err != nil {
		t.Fatalf("real socket refused: %v", err)
	}
}

// FuzzGuard feeds arbitrary byte streams, in arbitrary chunks, to the frame
// guard: it must never panic, and must reject any declared frame over the limit.
func FuzzGuard(f *testing.F) {
	f.Add(append(make([]byte, 64), frameHeader(0, 3)...), uint8(7))
	f.Add(append(make([]byte, 64), frameHeader(flagLong, 1<<40)...), uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		g := newGuardConn(nil)
		step := int(chunk%16) + 1
		for i := 0; i < len(stream); i += step {
			if err := g.scan(stream[i:min(i+step, len(stream))]); err != nil {
				return
			}
		}
		if g.state == stBody && g.bodyLeft > MaxFrameBytes {
			t.Fatalf("accepted a frame of %d bytes", g.bodyLeft)
		}
	})
}
