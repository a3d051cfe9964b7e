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

// guardOut feeds stream to a guard in chunks of step bytes and returns
// what zmq4 would read, or the guard's error.
func guardOut(lim frameLimits, stream []byte, step int) ([]byte, *guardConn, error) {
	g := newGuardConn(nil, lim)
	var out []byte
	for i := 0; i < len(stream); i += step {
		g.obuf = g.obuf[:0]
		if err := g.scan(stream[i:min(i+step, len(stream))]); err != nil {
			return out, g, err
		}
		out = append(out, g.obuf...)
	}
	return out, g, nil
}

func frame(flags byte, body []byte) []byte {
	return append(frameHeader(flags, uint64(len(body))), body...)
}

var cutFrame = frame(0, []byte(CutMarker))

func TestGuardCutsOversizedFrames(t *testing.T) {
	lim := frameLimits{frame: 1000, message: 3000, frames: 8, command: 100}
	greeting := make([]byte, 64)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	big := bytes.Repeat([]byte{'z'}, 5000)
	for name, tc := range map[string]struct {
		in, want []byte
		err      bool
	}{
		"small frames pass unchanged": {
			in:   cat(greeting, frame(flagMore, []byte("abc")), frame(0, make([]byte, 300))),
			want: cat(greeting, frame(flagMore, []byte("abc")), frame(0, make([]byte, 300))),
		},
		"an oversized frame becomes the marker, the next message is intact": {
			in:   cat(greeting, frame(flagMore, []byte("id")), frame(flagMore, big), frame(0, []byte("tail")), frame(0, []byte("next"))),
			want: cat(greeting, frame(flagMore, []byte("id")), frame(flagMore, []byte(CutMarker)), frame(0, nil), frame(0, []byte("next"))),
		},
		"frames under the frame limit that exceed the message limit": {
			in:   cat(greeting, frame(flagMore, make([]byte, 900)), frame(flagMore, make([]byte, 900)), frame(flagMore, make([]byte, 900)), frame(0, make([]byte, 900))),
			want: cat(greeting, frame(flagMore, make([]byte, 900)), frame(flagMore, make([]byte, 900)), frame(flagMore, make([]byte, 900)), cutFrame),
		},
		"a declared 2^62-byte frame is skipped, never read": {
			in:   cat(greeting, frameHeader(0, 1<<62), []byte("some of its body")),
			want: cat(greeting, cutFrame),
		},
		"a command over the ceiling closes the connection": {
			in:  cat(greeting, frameHeader(flagCommand, 101)),
			err: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			for _, step := range []int{1, 3, 64, 1 << 20} {
				out, _, err := guardOut(lim, tc.in, step)
				if tc.err {
					if !errors.Is(err, ErrCommandTooLarge) {
						t.Fatalf("step %d: want ErrCommandTooLarge, got %v", step, err)
					}
					continue
				}
				if err != nil || !bytes.Equal(out, tc.want) {
					t.Fatalf("step %d: err %v\n got %q\nwant %q", step, err, out, tc.want)
				}
			}
		})
	}
	// Endless empty frames of one message: the ninth ends the message as
	// a marker; what follows starts new messages.
	in := cat(greeting, bytes.Repeat(frameHeader(flagMore, 0), 20))
	out, g, _ := guardOut(lim, in, 7)
	want := cat(greeting, bytes.Repeat(frameHeader(flagMore, 0), 8), cutFrame, bytes.Repeat(frameHeader(flagMore, 0), 8), cutFrame, bytes.Repeat(frameHeader(flagMore, 0), 2))
	if !bytes.Equal(out, want) || g.cutFrames != 2 {
		t.Fatalf("empty-frame flood: cut %d\n got %q\nwant %q", g.cutFrames, out, want)
	}
}

func TestGuardedDialRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "real.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "k-1")
	if err := os.Symlink(sock, link); err != nil {
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
	if err := CheckSocket(sock); err != nil {
		t.Fatalf("real socket refused: %v", err)
	}
}

// FuzzGuard feeds arbitrary byte streams, in arbitrary chunks, to the frame
// guard: it must never panic, and what it lets through must parse as ZMTP
// frames within the limits (cut frames carry only the marker).
func FuzzGuard(f *testing.F) {
	f.Add(append(make([]byte, 64), frameHeader(0, 3)...), uint8(7))
	f.Add(append(make([]byte, 64), frameHeader(flagLong, 1<<40)...), uint8(1))
	f.Add(append(make([]byte, 64), bytes.Repeat(frameHeader(flagMore, 200), 30)...), uint8(3))
	lim := frameLimits{frame: 1000, message: 3000, frames: 8, command: 100}
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		out, _, err := guardOut(lim, stream, int(chunk%16)+1)
		if err != nil {
			return
		}
		if len(out) < 64 {
			return
		}
		out = out[64:]
		var msg uint64
		frames := 0
		for len(out) >= 2 {
			flags := out[0]
			size, hl := uint64(out[1]), 2
			if flags&flagLong != 0 {
				if len(out) < 9 {
					return
				}
				size, hl = binary.BigEndian.Uint64(out[1:9]), 9
			}
			if flags&flagCommand != 0 {
				if size > lim.command {
					t.Fatalf("command of %d bytes let through", size)
				}
			} else {
				frames++
				msg += size + frameOverhead
				if size > lim.frame || msg > lim.message+uint64(len(CutMarker))+frameOverhead || frames > lim.frames+1 {
					t.Fatalf("frame %d of %d bytes (message %d) let through", frames, size, msg)
				}
				if flags&flagMore == 0 {
					msg, frames = 0, 0
				}
			}
			if uint64(len(out)-hl) < size {
				return // stream ended mid-body
			}
			out = out[uint64(hl)+size:]
		}
	})
}
