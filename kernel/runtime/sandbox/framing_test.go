package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// framingCheck runs in python3 after the launcher's definitions (its
// main() does not run when it is not __main__). It builds the stream Deno
// 2.9.6 writes when its PUB socket's buffer is full: a status message in
// the middle of a flood's 1 MB stream frame, the rest of that frame's body
// after it. It feeds the stream, in uneven reads, to the filter of Deno's
// iopub (IOPubFilter) and parses what the reader passes on as the gateway does: every
// frame header must be one, and the messages after the broken one must
// arrive whole.
const framingCheck = `
import random
class NoSync:
    def synchronise(self, header, msg_id):
        pass
    def syncing(self, msg_id):
        return False
def frame(b, more):
    if len(b) > 255:
        return bytes([2 | more]) + len(b).to_bytes(8, "big") + b
    return bytes([more, len(b)]) + b
def message(kind, content):
    parts = [DELIM, b"s" * 64, b'{"msg_type":"%s"}' % kind.encode(), b"{}", b"{}", content]
    return b"".join(frame(p, int(i < len(parts) - 1)) for i, p in enumerate(parts))
greeting = b"\xff" + b"\x00" * 8 + b"\x7f\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" * 32
ready = zmtp_hello(b"PUB")[64:]
flood = message("stream", b'{"name":"stdout","text":"' + b"z" * 1000000 + b'\n"}')
status = message("status", b'{"execution_state":"idle"}')
result = message("execute_result", b'{"x":"41"}')
cut = len(flood) - 406000  # where Deno's write stopped
def parse(got):
    pos, frames, msgs = 0, [], []
    while pos < len(got):
        f = got[pos]
        assert not f & RESERVED_FLAGS, "a frame header that is none at %d: %r" % (pos, got[pos:pos + 20])
        hl = 9 if f & 2 else 2
        size = int.from_bytes(got[pos + 1:pos + hl], "big")
        assert size < MAX_FRAME, "a frame of %d bytes" % size
        frames.append(got[pos + hl:pos + hl + size])
        pos += hl + size
        if not f & 1 or f & 4:
            msgs.append(frames)
            frames = []
    assert pos == len(got) and not frames, "the stream ends inside a message"
    return msgs
for first in (message("stream", b'{"text":"before"}'), message("stream", b"x" * 70000)):
    stream = greeting + ready + first + flood[:cut] + status + flood[cut:] + result + status
    for seed in range(20):
        rng = random.Random(seed)
        f = IOPubFilter(NoSync())
        out, i = [], 0
        while i < len(stream):
            n = rng.randint(1, 70000)
            out.append(f.from_kernel(stream[i:i + n]))
            i += n
        msgs = parse(b"".join(out)[64:])
        assert msgs[1] == parse(first)[0], "the message before the broken one"
        assert msgs[-2:] == parse(result + status), "the messages after the broken one: %r" % [m[2] for m in msgs]
        assert 0 < f.reader.lost < 1000, f.reader.lost
print("ok")
`

// TestIOPubReaderResynchronises: the launcher's reader of Deno's iopub
// gets back in step after Deno wrote one message into the middle of
// another (framingCheck); without that, the gateway skipped the session's
// output for good after a flood.
func TestIOPubReaderResynchronises(t *testing.T) {
	path := filepath.Join(t.TempDir(), "launcher.py")
	if err := os.WriteFile(path, []byte(launcher), 0o600); err != nil {
		t.Fatal(err)
	}
	code := "import sys\nns = {'__name__': 'launcher'}\nexec(compile(open(sys.argv[1]).read(), sys.argv[1], 'exec'), ns)\nglobals().update(ns)\n" + framingCheck
	var stdout, stderr strings.Builder
	cmd := exec.Command("/usr/bin/python3", "-I", "-B", "-c", code, path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || strings.TrimSpace(stdout.String()) != "ok" {
		t.Fatalf("%v\n%s\n%.2000s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "lost its framing") {
		t.Fatalf("the launcher did not say the stream lost its framing: %.2000s", stderr.String())
	}
}
