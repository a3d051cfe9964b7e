package runtimetest

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
)

// NoNetwork proves k has no network: a listener on the host's 127.0.0.1
// (and any extra host loopback ports, such as the gateway's) cannot be
// reached from inside, and the sandbox sees only lo and no routes.
func NoNetwork(t *testing.T, k Kernel, extraPorts ...int) {
	t.Helper()
	l, accepted := HostListener(t, "tcp", "127.0.0.1:0")
	ports := append([]int{l.Addr().(*net.TCPAddr).Port}, extraPorts...)
	var list []string
	for _, p := range ports {
		list = append(list, strconv.Itoa(p))
	}
	out, _ := k.Run(t, `import socket
for port in [`+strings.Join(list, ", ")+`]:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2); print("CONNECTED", port)
    except OSError as e:
        print("refused", port)
print([n for _, n in socket.if_nameindex()])
print(open("/proc/net/route").read().strip().count("\n"))`)
	if strings.Contains(out, "CONNECTED") || strings.Count(out, "refused") != len(ports) {
		t.Fatalf("the sandbox reached a host port: %s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[len(lines)-2] != "['lo']" || lines[len(lines)-1] != "0" {
		t.Fatalf("want only lo and no routes, got %q", lines[len(lines)-2:])
	}
	NeverAccepted(t, accepted)
}

// HostListener listens on the host at addr until the test ends; accepted
// receives once if anything connects.
func HostListener(t *testing.T, network, addr string) (net.Listener, <-chan struct{}) {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted := make(chan struct{}, 1)
	go func() { // ends when the listener closes
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	return l, accepted
}

// NeverAccepted fails the test if a HostListener was reached.
func NeverAccepted(t *testing.T, accepted <-chan struct{}) {
	t.Helper()
	select {
	case <-accepted:
		t.Fatal("a host listener accepted a connection from the sandbox")
	case <-time.After(100 * time.Millisecond):
	}
}

// Dies runs code that must kill the kernel and checks that the sandbox
// reports the exit with a reason containing want.
func Dies(t *testing.T, k Kernel, code, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := k.Client.Execute(ctx, code, kernel.ExecuteOptions{}, nil); !errors.Is(err, kernel.ErrDead) {
		t.Fatalf("want the kernel dead, got %v", err)
	}
	select {
	case <-k.Sandbox.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the sandbox reported no exit")
	}
	if !strings.Contains(k.Sandbox.ExitReason(), want) {
		t.Fatalf("exit reason %q, want %q", k.Sandbox.ExitReason(), want)
	}
}
