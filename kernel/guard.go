package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// The guard sits between the kernel's socket and zmq4. zmq4 allocates
// whatever frame size a peer declares (up to 2^63 bytes) and keeps every
// frame of a message, so a hostile kernel could make the gateway allocate
// without bound. The guard parses ZMTP 3 framing on the raw byte stream
// and, before zmq4 sees a frame header over the channel's ceilings,
// rewrites the frame into a short marker (CutMarker) and skips its body
// unread: nothing of it is ever allocated, the connection lives on, and the
// message, which can no longer be verified, is dropped and counted by the
// Client. Only a violation that leaves no way to resynchronise (an
// oversized handshake command) closes the connection.

// CutMarker replaces the body of every frame the guard cut. A message
// carrying it is never decoded; the Client reports the cut to the request
// named by the message's parent header, if it can still read one.
const CutMarker = "\x00glassroom:frame-cut\x00"

// frameLimits are the ceilings of one channel.
type frameLimits struct {
	frame   uint64 // bytes of one data frame
	message uint64 // bytes of one message, counting frameOverhead per frame
	frames  int    // frames of one message
	command uint64 // bytes of one ZMTP command (handshake, ping)
}

// frameOverhead is what zmq4 and the Client keep per frame besides its
// bytes; counting it stops endless empty frames (2 bytes on the wire).
const frameOverhead = 64

// Per-channel ceilings. iopub carries output (one display, one image); the
// other channels carry small replies. With zmq4's receive queue of ten
// messages per socket, a hostile kernel can pin at most about
// 12 × (iopub + shell + stdin + control) ≈ 140 MiB of the gateway.
const (
	MaxIOPubFrameBytes   = 8 << 20
	MaxIOPubMessageBytes = 8<<20 + 256<<10
	MaxShellMessageBytes = 2 << 20
	MaxSmallMessageBytes = 256 << 10 // stdin, control
	MaxFramesPerMessage  = 1024
	maxCommandBytes      = 4 << 10
	maxHeartbeatBytes    = 1 << 10
)

// MaxMessageBytes is the largest message any channel lets through.
const MaxMessageBytes = MaxIOPubMessageBytes

func limitsFor(ch Channel) frameLimits {
	l := frameLimits{frames: MaxFramesPerMessage, command: maxCommandBytes}
	switch ch {
	case IOPub:
		l.frame, l.message = MaxIOPubFrameBytes, MaxIOPubMessageBytes
	case Shell:
		l.frame, l.message = MaxShellMessageBytes, MaxShellMessageBytes
	case Heartbeat:
		l.frame, l.message, l.frames = maxHeartbeatBytes, maxHeartbeatBytes, 4
	default:
		l.frame, l.message = MaxSmallMessageBytes, MaxSmallMessageBytes
	}
	return l
}

// ErrCommandTooLarge is returned, and the connection closed, when a kernel
// sends a ZMTP command over the ceiling.
var ErrCommandTooLarge = errors.New("kernel: ZMTP command from kernel exceeds size limit")

const (
	flagMore    = 0x01
	flagLong    = 0x02
	flagCommand = 0x04
	greetingLen = 64
	readChunk   = 32 << 10
)

type guardState uint8

const (
	stFlags guardState = iota // next byte is a frame's flags
	stSize                    // gathering the size bytes
	stBody                    // passing the body through
	stSkip                    // dropping the body of a cut frame
)

// guardConn is a net.Conn whose reads are the peer's bytes with oversized
// frames cut. Like any net.Conn it is used by one reader at a time.
type guardConn struct {
	net.Conn
	lim frameLimits

	raw  []byte // read buffer
	out  []byte // transformed bytes not yet returned
	obuf []byte // backing array of out
	err  error  // sticky read error

	greetLeft int
	state     guardState
	hdr       [9]byte // flags and size bytes of the current frame
	hdrLen    int
	hdrNeed   int
	left      uint64 // body bytes to pass or skip

	msgBytes  uint64 // of the current message so far
	msgFrames int
	msgCut    bool // a frame of the current message was cut
	more      bool // the frame being passed has MORE set (as emitted)
	cutFrames int  // frames cut so far (for tests and logs)
}

func newGuardConn(c net.Conn, lim frameLimits) *guardConn {
	return &guardConn{Conn: c, lim: lim, greetLeft: greetingLen, raw: make([]byte, readChunk)}
}

// Read returns the next transformed bytes. It never returns (0, nil).
func (g *guardConn) Read(p []byte) (int, error) {
	for len(g.out) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		n, err := g.Conn.Read(g.raw)
		g.obuf = g.obuf[:0]
		if n > 0 {
			if verr := g.scan(g.raw[:n]); verr != nil {
				g.Conn.Close()
				g.err = verr
				return 0, verr
			}
		}
		g.out = g.obuf
		if err != nil {
			g.err = err
		}
	}
	n := copy(p, g.out)
	g.out = g.out[n:]
	return n, nil
}

// scan advances the framing state over b, appending what zmq4 may see to
// g.obuf. It fails only on an oversized command.
func (g *guardConn) scan(b []byte) error {
	for len(b) > 0 {
		if g.greetLeft > 0 {
			k := min(g.greetLeft, len(b))
			g.obuf = append(g.obuf, b[:k]...)
			g.greetLeft -= k
			b = b[k:]
			continue
		}
		switch g.state {
		case stFlags:
			g.hdr[0] = b[0]
			g.hdrLen, g.hdrNeed = 1, 2
			if b[0]&flagLong != 0 {
				g.hdrNeed = 9
			}
			g.state = stSize
			b = b[1:]
		case stSize:
			k := copy(g.hdr[g.hdrLen:g.hdrNeed], b)
			g.hdrLen += k
			b = b[k:]
			if g.hdrLen == g.hdrNeed {
				if err := g.frameHeader(); err != nil {
					return err
				}
			}
		case stBody, stSkip:
			k := uint64(len(b))
			if k > g.left {
				k = g.left
			}
			if g.state == stBody {
				g.obuf = append(g.obuf, b[:k]...)
			}
			g.left -= k
			b = b[k:]
			if g.left == 0 {
				g.endFrame()
			}
		}
	}
	return nil
}

// frameHeader decides the fate of a frame whose header is complete.
func (g *guardConn) frameHeader() error {
	flags := g.hdr[0]
	size := uint64(g.hdr[1])
	if g.hdrNeed == 9 {
		size = binary.BigEndian.Uint64(g.hdr[1:9])
	}
	if flags&flagCommand != 0 {
		if size > g.lim.command {
			return fmt.Errorf("%w: %d bytes", ErrCommandTooLarge, size)
		}
		g.pass(flags, size)
		return nil
	}
	g.msgFrames++
	switch {
	case g.msgFrames > g.lim.frames:
		// End the message here: the frames that follow form new messages,
		// which fail verification on their own.
		g.cut(flags&^flagMore, size)
	case g.msgCut:
		g.emitEmpty(flags, size)
	case size > g.lim.frame || g.msgBytes+size+frameOverhead > g.lim.message:
		g.cut(flags, size)
	default:
		g.msgBytes += size + frameOverhead
		g.pass(flags, size)
	}
	return nil
}

// pass lets the frame through unchanged.
func (g *guardConn) pass(flags byte, size uint64) {
	g.obuf = append(g.obuf, g.hdr[:g.hdrNeed]...)
	g.more = flags&flagMore != 0 && flags&flagCommand == 0
	g.body(stBody, size)
}

// cut replaces the frame with CutMarker and skips its body.
func (g *guardConn) cut(flags byte, size uint64) {
	g.msgCut = true
	g.cutFrames++
	g.obuf = append(g.obuf, flags&^flagLong, byte(len(CutMarker)))
	g.obuf = append(g.obuf, CutMarker...)
	g.more = flags&flagMore != 0
	g.body(stSkip, size)
}

// emitEmpty replaces a later frame of a cut message with an empty one.
func (g *guardConn) emitEmpty(flags byte, size uint64) {
	g.obuf = append(g.obuf, flags&^flagLong, 0)
	g.more = flags&flagMore != 0
	g.body(stSkip, size)
}

func (g *guardConn) body(st guardState, size uint64) {
	g.state, g.left = st, size
	if size == 0 {
		g.endFrame()
	}
}

func (g *guardConn) endFrame() {
	g.state = stFlags
	if !g.more {
		g.msgBytes, g.msgFrames, g.msgCut = 0, 0, false
	}
}
