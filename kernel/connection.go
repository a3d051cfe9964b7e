package kernel

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// Channel names one of a kernel's five sockets.
type Channel string

// The five Jupyter channels.
const (
	Shell     Channel = "shell"
	IOPub     Channel = "iopub"
	Stdin     Channel = "stdin"
	Control   Channel = "control"
	Heartbeat Channel = "hb"
)

// Channels lists every channel in a fixed order.
var Channels = [...]Channel{Shell, IOPub, Stdin, Control, Heartbeat}

// ConnectionInfo is the Jupyter connection file. For the ipc transport, IP is
// a path prefix and each port is a suffix: the shell socket of
// {"ip":"/run/k","shell_port":1} is the unix socket /run/k-1.
type ConnectionInfo struct {
	Transport       string `json:"transport"`
	IP              string `json:"ip"`
	ShellPort       int    `json:"shell_port"`
	IOPubPort       int    `json:"iopub_port"`
	StdinPort       int    `json:"stdin_port"`
	ControlPort     int    `json:"control_port"`
	HBPort          int    `json:"hb_port"`
	Key             string `json:"key"`
	SignatureScheme string `json:"signature_scheme"`
	KernelName      string `json:"kernel_name,omitempty"`
}

// ErrBadConnection reports an unusable ConnectionInfo.
var ErrBadConnection = errors.New("kernel: bad connection info")

// NewIPCConnection returns ipc connection info with ports 1..5 under the
// path prefix and a fresh random 256-bit key.
func NewIPCConnection(prefix string) ConnectionInfo {
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		panic(fmt.Sprintf("kernel: crypto/rand failed: %v", err))
	}
	return ConnectionInfo{
		Transport: "ipc", IP: prefix,
		ShellPort: 1, IOPubPort: 2, StdinPort: 3, ControlPort: 4, HBPort: 5,
		Key: hex.EncodeToString(key[:]), SignatureScheme: "hmac-sha256",
	}
}

// Validate reports whether the info can be used to connect.
func (c ConnectionInfo) Validate() error {
	switch c.Transport {
	case "ipc", "tcp":
	default:
		return fmt.Errorf("%w: transport %q", ErrBadConnection, c.Transport)
	}
	if c.IP == "" {
		return fmt.Errorf("%w: empty ip", ErrBadConnection)
	}
	if c.SignatureScheme != "hmac-sha256" {
		return fmt.Errorf("%w: signature scheme %q", ErrBadConnection, c.SignatureScheme)
	}
	if c.Key == "" {
		return fmt.Errorf("%w: %w", ErrBadConnection, ErrEmptyKey)
	}
	for _, ch := range Channels {
		if p := c.Port(ch); p <= 0 || p > 65535 {
			return fmt.Errorf("%w: %s port %d", ErrBadConnection, ch, p)
		}
	}
	return nil
}

// Port returns the port number of ch.
func (c ConnectionInfo) Port(ch Channel) int {
	switch ch {
	case Shell:
		return c.ShellPort
	case IOPub:
		return c.IOPubPort
	case Stdin:
		return c.StdinPort
	case Control:
		return c.ControlPort
	case Heartbeat:
		return c.HBPort
	}
	return 0
}

// SocketPath returns the unix socket path of ch for the ipc transport.
func (c ConnectionInfo) SocketPath(ch Channel) string {
	return c.IP + "-" + strconv.Itoa(c.Port(ch))
}

// endpoint returns the guarded zmq4 endpoint for ch (see transport.go).
func (c ConnectionInfo) endpoint(ch Channel) string {
	if c.Transport == "ipc" {
		return transportName("unix", ch) + "://" + c.SocketPath(ch)
	}
	return transportName("tcp", ch) + "://" + c.IP + ":" + strconv.Itoa(c.Port(ch))
}

// WriteFile writes the connection file to path with the given permissions.
func (c ConnectionInfo) WriteFile(path string, perm os.FileMode) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("kernel: write connection file: %w", err)
	}
	if err := os.WriteFile(path, b, perm); err != nil {
		return fmt.Errorf("kernel: write connection file: %w", err)
	}
	return nil
}
