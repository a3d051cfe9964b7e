package jupyter

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// The framings round trip, buffers included, and hostile frames are
// refused without a panic or an allocation their size does not justify.

func TestJupyterFramesRoundTrip(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\x00")
	for _, v1 := range []bool{false, true} {
		for _, buffers := range [][][]byte{nil, {png, {}, []byte("second")}} {
			m := &outMsg{channel: "iopub", msgType: "display_data", parent: json.RawMessage(`{"msg_id":"p1","session":"s"}`),
				content: map[string]any{"data": map[string]string{"text/plain": "<b>&"}}, buffers: buffers}
			frame, bin, err := encode(m, "id1", "kernel-session", time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC), v1)
			if err != nil {
				t.Fatal(err)
			}
			if bin != (v1 || len(buffers) > 0) {
				t.Fatalf("v1=%v buffers=%d: binary %v", v1, len(buffers), bin)
			}
			got, err := decodeFrame(frame, bin, v1)
			if err != nil {
				t.Fatalf("v1=%v: decode own frame: %v", v1, err)
			}
			var h jheader
			json.Unmarshal(got.Header, &h)
			if got.Channel != "iopub" || h.MsgID != "id1" || h.MsgType != "display_data" || h.Session != "kernel-session" ||
				h.Date != "2024-05-06T07:08:09.123456Z" || h.Version != "5.3" || string(got.Parent) != `{"msg_id":"p1","session":"s"}` ||
				!strings.Contains(string(got.Content), `<b>&`) && !strings.Contains(string(got.Content), `\u003cb\u003e\u0026`) {
				t.Fatalf("v1=%v: %+v %s", v1, h, got.Content)
			}
			if len(got.Buffers) != len(buffers) {
				t.Fatalf("v1=%v: %d buffers, want %d", v1, len(got.Buffers), len(buffers))
			}
			for i := range buffers {
				if !bytes.Equal(got.Buffers[i], buffers[i]) {
					t.Fatalf("buffer %d: %q, want %q", i, got.Buffers[i], buffers[i])
				}
			}
		}
	}
}

func TestJupyterFramesRefused(t *testing.T) {
	le := func(ns ...uint64) []byte {
		b := make([]byte, 8*len(ns))
		for i, n := range ns {
			binary.LittleEndian.PutUint64(b[8*i:], n)
		}
		return b
	}
	be := func(ns ...uint32) []byte {
		b := make([]byte, 4*len(ns))
		for i, n := range ns {
			binary.BigEndian.PutUint32(b[4*i:], n)
		}
		return b
	}
	for name, c := range map[string]struct {
		data     []byte
		bin, v1  bool
		contains string
	}{
		"text on v1":                {[]byte(`{}`), false, true, "text frame"},
		"v1 too short":              {[]byte{1, 2, 3}, true, true, "binary frame of 3 bytes"},
		"v1 huge count":             {le(1 << 62), true, true, "offsets"},
		"v1 count past the frame":   {le(7, 0, 0), true, true, "offsets"},
		"v1 offset past the end":    {append(le(6, 56, 57, 58, 59, 60, 1<<40), make([]byte, 10)...), true, true, "past the frame"},
		"v1 offsets backwards":      {append(le(6, 56, 60, 58, 59, 60, 61), make([]byte, 10)...), true, true, "bad offsets"},
		"v1 offset inside table":    {append(le(6, 8, 57, 58, 59, 60, 61), make([]byte, 10)...), true, true, "bad offsets"},
		"v1 parts not JSON":         {append(le(6, 56, 61, 62, 63, 64, 65), []byte("shellxyzw!")...), true, true, "JSON objects"},
		"legacy binary short":       {[]byte{0, 0}, true, false, "binary frame"},
		"legacy binary zero parts":  {append(be(0), 0, 0, 0, 0), true, false, "0 parts"},
		"legacy binary huge count":  {append(be(1<<31), 0, 0, 0, 0), true, false, "parts"},
		"legacy binary bad offsets": {append(be(2, 12, 4), []byte("{}{}")...), true, false, "bad offsets"},
		"legacy JSON not JSON":      {[]byte(`{nope`), false, false, "bad Jupyter frame"},
		"legacy content an array":   {[]byte(`{"channel":"shell","header":{},"content":[]}`), false, false, "JSON objects"},
		"legacy huge header":        {[]byte(`{"channel":"shell","header":{"x":"` + strings.Repeat("a", maxHeaderBytes) + `"}}`), false, false, "header over"},
	} {
		_, err := decodeFrame(c.data, c.bin, c.v1)
		if !errors.Is(err, errBadFrame) || !strings.Contains(err.Error(), c.contains) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, h := range map[string]string{
		"no msg_type":     `{"msg_id":"a"}`,
		"control chars":   `{"msg_id":"a","msg_type":"exec\u0000"}`,
		"long session":    `{"msg_type":"x","session":"` + strings.Repeat("s", 300) + `"}`,
		"wrong JSON type": `{"msg_type":7}`,
	} {
		if _, err := readHeader(json.RawMessage(h)); !errors.Is(err, errBadFrame) {
			t.Errorf("header %s: %v", name, err)
		}
	}
}

// FuzzJupyterFrame: no frame a client sends panics the decoder.
func FuzzJupyterFrame(f *testing.F) {
	m := &outMsg{channel: "shell", msgType: "execute_request", content: map[string]string{"code": "1"}, buffers: [][]byte{{1, 2}}}
	for _, v1 := range []bool{false, true} {
		frame, bin, _ := encode(m, "a", "b", time.Now(), v1)
		f.Add(frame, bin, v1)
	}
	f.Add([]byte(`{"channel":"shell","header":{"msg_type":"x"}}`), false, false)
	f.Fuzz(func(t *testing.T, data []byte, bin, v1 bool) {
		if m, err := decodeFrame(data, bin, v1); err == nil {
			readHeader(m.Header)
		}
	})
}
