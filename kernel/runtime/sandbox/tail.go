package sandbox

import (
	"bytes"
	"strings"
	"sync"
)

// TailBuffer keeps the last Max bytes written to it: a kernel process's
// own output, kept to explain a failed start (Process.Diagnostics). It is
// safe for concurrent use.
type TailBuffer struct {
	Max int

	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer; it never fails.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.Max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

// Note adds a line of the gateway's own.
func (t *TailBuffer) Note(line string) { _, _ = t.Write([]byte("\n" + line + "\n")) }

// String returns what is kept, invalid UTF-8 (a cut character) replaced.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(t.buf.String(), "?")
}
