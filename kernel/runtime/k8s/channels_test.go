package k8s

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/rs/zerolog"
)

// echoKernel listens on five loopback ports and answers each connection
// with its channel's name, then echoes what it gets: a stand-in for the
// kernel's sockets (which, like ZMTP, speak first).
func echoKernel(t *testing.T) []int {
	t.Helper()
	var ports []int
	for _, ch := range kernel.Channels {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		go func() { // ends with the listener (cleanup)
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { // ends when the peer closes
					defer c.Close()
					_, _ = io.WriteString(c, string(ch)+"\n")
					_, _ = io.Copy(c, c)
				}()
			}
		}()
	}
	return ports
}

// startTLSAgent serves a pod agent with the session's TLS over a
// directory, relaying to ports; it returns its address, token and
// certificate.
func startTLSAgent(t *testing.T, ports []int) (addr, token string, cert []byte) {
	t.Helper()
	return startTLSAgentIn(t, t.TempDir(), ports)
}

// startTLSAgentIn is startTLSAgent over dir, with its fence file in
// dir/control.
func startTLSAgentIn(t *testing.T, dir string, ports []int) (addr, token string, cert []byte) {
	t.Helper()
	for _, sub := range []string{"workspace", "control", "status"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cert, key, err := NewAgentCert("s1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := AgentServerTLS(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	token = strings.Repeat("k", 40)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeAgent(ctx, AgentConfig{Workspace: filepath.Join(dir, "workspace"), Token: token,
			Control: filepath.Join(dir, "control", "kernel.json"), Status: filepath.Join(dir, "status", "kernel.json"),
			FenceFile: filepath.Join(dir, "control", "fence.json"),
			TLS:       conf, KernelHost: "127.0.0.1", KernelPorts: ports}, ln, zerolog.Nop())
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String(), token, cert
}

// TestChannelRelay carries every channel through the relay's unix
// sockets and the agent's TLS tunnels to the kernel's ports, with what
// the kernel says first; a wrong token, a wrong certificate and an
// unknown channel get nothing; Close ends carried connections (the
// agent's shutdown too) and removes the sockets.
func TestChannelRelay(t *testing.T) {
	ports := echoKernel(t)
	addr, token, cert := startTLSAgent(t, ports)
	conf, err := AgentClientTLS(cert)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	relay, err := newChannelRelay(func(ctx context.Context, ch kernel.Channel) (net.Conn, error) {
		return dialAgentChannel(ctx, addr, conf, token, 1, ch)
	})
	if err != nil {
		t.Fatal(err)
	}
	info := relay.connection("key")
	if st, err := os.Stat(relay.dir); err != nil || st.Mode().Perm() != 0o700 || info.Transport != "ipc" || info.Key != "key" {
		t.Fatalf("relay %+v: %v %v", info, st, err)
	}
	var open []net.Conn
	for _, ch := range kernel.Channels {
		c, err := net.Dial("unix", info.SocketPath(ch))
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		if line, err := br.ReadString('\n'); err != nil || line != string(ch)+"\n" {
			t.Fatalf("%s: the kernel's first words %q: %v", ch, line, err)
		}
		if _, err := io.WriteString(c, "ping "+string(ch)+"\n"); err != nil {
			t.Fatal(err)
		}
		if line, err := br.ReadString('\n'); err != nil || line != "ping "+string(ch)+"\n" {
			t.Fatalf("%s: echo %q: %v", ch, line, err)
		}
	}

	// What others get from the agent.
	for name, try := range map[string]func() error{
		"no token": func() error { _, err := dialAgentChannel(ctx, addr, conf, "", 1, kernel.IOPub); return err },
		"wrong token": func() error {
			_, err := dialAgentChannel(ctx, addr, conf, strings.Repeat("x", 40), 1, kernel.IOPub)
			return err
		},
		"unknown name": func() error {
			_, err := dialAgentChannel(ctx, addr, conf, token, 1, kernel.Channel("nope"))
			return err
		},
	} {
		if err := try(); !errors.Is(err, errChannelRefused) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
	other, _, err := NewAgentCert("s2", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherConf, _ := AgentClientTLS(other)
	if c, err := dialAgentChannel(ctx, addr, otherConf, token, 1, kernel.IOPub); err == nil {
		c.Close()
		t.Error("an agent whose certificate is not the session's was trusted")
	}

	if err := relay.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range open {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("a carried connection outlived the relay's Close")
		}
		c.Close()
	}
	if _, err := os.Stat(relay.dir); !os.IsNotExist(err) {
		t.Fatalf("sockets left: %v", err)
	}
}

// TestAgentFence: the agent keeps the highest gateway epoch it has seen
// (in its fence file too): a tunnel opened under epoch 1 is closed the
// moment a request of epoch 2 arrives, and epoch 1 is refused from then
// on (errFenced), its calls and tunnels alike; epoch 2 goes on, and is
// kept in the fence file (for an agent that restarts).
func TestAgentFence(t *testing.T) {
	ports := echoKernel(t)
	dir := t.TempDir()
	addr, token, cert := startTLSAgentIn(t, dir, ports)
	conf, err := AgentClientTLS(cert)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old, err := dialAgentChannel(ctx, addr, conf, token, 1, kernel.Shell)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	br := bufio.NewReader(old)
	if line, err := br.ReadString('\n'); err != nil || line != "shell\n" {
		t.Fatalf("epoch 1's tunnel: %q %v", line, err)
	}
	tr := newAgentTransport(conf)
	defer tr.CloseIdleConnections()
	status := func(epoch int64) error {
		_, err := (&agentClient{base: "https://" + addr, token: token, epoch: epoch, http: newAgentHTTP(tr)}).wait(ctx, 0, "ready", 0)
		return err
	}
	if err := status(2); err != nil {
		t.Fatalf("epoch 2: %v", err)
	}
	_ = old.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadString('\n'); err == nil {
		t.Fatal("epoch 1's tunnel outlived epoch 2's first request")
	}
	if err := status(1); !errors.Is(err, errFenced) {
		t.Fatalf("epoch 1 after epoch 2: %v, want fenced", err)
	}
	if c, err := dialAgentChannel(ctx, addr, conf, token, 1, kernel.Shell); !errors.Is(err, errFenced) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("epoch 1's new tunnel: %v, want fenced", err)
	}
	if c, err := dialAgentChannel(ctx, addr, conf, token, 2, kernel.Shell); err != nil {
		t.Fatalf("epoch 2's tunnel: %v", err)
	} else {
		c.Close()
	}
	if got := readFence(filepath.Join(dir, "control", "fence.json")); got != 2 {
		t.Fatalf("fence file: %d", got)
	}
}
