package kernel

import (
	"sync"

	"github.com/go-zeromq/zmq4"
)

// sockets are a client's five zmq sockets and the guarded connections
// under them (dials). Each socket has one reading goroutine, the client's;
// sends on the shell, control and stdin sockets are serialised per socket
// (sendSocket). close may be called from any goroutine, more than once.
type sockets struct {
	shell, control, stdin sendSocket
	iopub, hb             zmq4.Socket
	dials                 *dialState
}

// sendSocket is a socket whose sends are serialised. Safe for concurrent
// use.
type sendSocket struct {
	mu   sync.Mutex
	sock zmq4.Socket
}

// send sends m; it blocks while another send on the socket is under way.
func (s *sendSocket) send(m zmq4.Msg) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock.SendMulti(m)
}

// forSend returns the socket of ch, or nil when ch (iopub, heartbeat) is
// not one a client sends messages on.
func (s *sockets) forSend(ch Channel) *sendSocket {
	switch ch {
	case Shell:
		return &s.shell
	case Control:
		return &s.control
	case Stdin:
		return &s.stdin
	}
	return nil
}

// receivers are the sockets the client's read loops own (heartbeat
// aside), nil for those not made yet.
func (s *sockets) receivers() []zmq4.Socket {
	return []zmq4.Socket{s.shell.sock, s.control.sock, s.stdin.sock, s.iopub}
}

// close closes every socket made and every connection dialed, including
// any zmq4 never took over.
func (s *sockets) close() {
	for _, sock := range append(s.receivers(), s.hb) {
		if sock != nil {
			_ = sock.Close()
		}
	}
	s.dials.closeAll()
}

// drain empties zmq4's per-socket receive queues after close, once the
// read loops have exited. zmq4's connection reader blocks, without
// watching its context, on a send into a full queue (10 messages); one
// free slot lets it see the closed connection and exit, instead of staying
// blocked with up to 11 messages. After close, Recv returns queued
// messages or an error at once.
func (s *sockets) drain() {
	for _, sock := range s.receivers() {
		if sock == nil {
			continue
		}
		for i, misses := 0, 0; i < 64 && misses < 16; i++ {
			if _, err := sock.Recv(); err != nil {
				misses++
			} else {
				misses = 0
			}
		}
	}
}
