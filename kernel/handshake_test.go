package kernel_test

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/rs/zerolog"
)

// TestTruncatedHandshakeIsAnError: a kernel whose READY command is cut
// short makes zmq4's handshake panic; Dial returns an error instead, with
// every socket closed.
func TestTruncatedHandshakeIsAnError(t *testing.T) {
	dir := t.TempDir()
	info := kernel.NewIPCConnection(filepath.Join(dir, "k"))
	var listeners []net.Listener
	for _, ch := range kernel.Channels {
		l, err := net.Listen("unix", info.SocketPath(ch))
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, l)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					greeting := make([]byte, 64)
					greeting[0], greeting[9], greeting[10] = 0xff, 0x7f, 3
					copy(greeting[12:], "NULL")
					c.Write(greeting)
					io.ReadFull(c, make([]byte, 64))
					// READY with one property whose value length is missing.
					body := append([]byte{5}, "READY"...)
					body = append(body, 3, 'a', 'b', 'c')
					c.Write(append([]byte{0x04, byte(len(body))}, body...))
					io.Copy(io.Discard, c)
				}()
			}
		}()
	}
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := kernel.Dial(ctx, info, kernel.Config{}, zerolog.Nop())
	if c != nil || !errors.Is(err, kernel.ErrMalformed) {
		t.Fatalf("want ErrMalformed from a truncated READY, got %v", err)
	}
}
