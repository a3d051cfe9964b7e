package runtimetest

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit/dap"
)

// Debugger checks that JupyterLab's debugger works in the runtime's
// python3 sandbox and stays inside it: the kernel_info reply says
// "debugger": true; the scripted debugger session (dap.Script: debugpy
// started by ipykernel inside the sandbox, the cell dumped to the
// sandbox's /tmp, a breakpoint hit, variables read while the cell is
// stopped, continue) runs through the runtime's kernel connection; and
// every socket debugpy listens on is on the sandbox's own 127.0.0.1,
// which the host's loopback is not (the host binds the same ports).
// otherPorts are ports the sandbox's network holds that are not the
// kernel's (a pod's agent listens in the pod's network).
func Debugger(t *testing.T, rt Starter, id string, otherPorts ...int) {
	k := Start(t, rt, sandbox.Spec{ID: id})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := k.Client.Request(ctx, kernel.Control, "kernel_info_request", struct{}{})
	if err != nil {
		t.Fatalf("kernel_info: %v", err)
	}
	var info struct {
		Debugger *bool `json:"debugger"`
	}
	if err := json.Unmarshal(rep.Content, &info); err != nil || info.Debugger == nil || !*info.Debugger {
		t.Fatalf("kernel_info_reply does not say debugger: true: %s", rep.Content)
	}

	dap.Script(t, dap.Client(k.Client))

	// debugpy's adapter outlives the debugger session (ipykernel starts it
	// once per kernel): its sockets are still there.
	out, ename := k.Run(t, `listening = []
for name in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        lines = open(name).read().splitlines()[1:]
    except OSError:
        continue
    for line in lines:
        f = line.split()
        if f[3] == "0A":
            listening.append(f[1] + "/" + f[9])
print(" ".join(listening))`)
	if ename != "" {
		t.Fatalf("list the sandbox's listening sockets: %s", out)
	}
	socks := strings.Fields(out)
	if len(socks) == 0 {
		t.Fatal("nothing listens in the sandbox after the debugger started: is /proc/net/tcp there?")
	}
	for _, s := range socks {
		s, inode, _ := strings.Cut(s, "/")
		addr, port, ok := strings.Cut(s, ":")
		if n, err := strconv.ParseUint(port, 16, 16); ok && err == nil && slices.Contains(otherPorts, int(n)) {
			continue
		}
		if !ok || addr != "0100007F" {
			t.Errorf("a socket in the sandbox listens on %s, not on 127.0.0.1", s)
			continue
		}
		n, err := strconv.ParseUint(port, 16, 16)
		if err != nil {
			t.Fatalf("port of %s: %v", s, err)
		}
		// The port is the sandbox's own: the host's 127.0.0.1 has it free,
		// or a host process holds it by chance (another socket than the
		// sandbox's: the host lists it under another inode).
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.FormatUint(n, 10))
		if err == nil {
			l.Close()
			continue
		}
		host := hostListenerInodes(t, port)
		if len(host) == 0 || slices.Contains(host, inode) {
			t.Errorf("the host cannot bind 127.0.0.1:%d, which debugpy holds in the sandbox (host socket inodes %v, sandbox's %s): %v", n, host, inode, err)
			continue
		}
		t.Logf("a host socket (inodes %v) holds 127.0.0.1:%d by chance; the sandbox's is inode %s", host, n, inode)
	}
}

// hostListenerInodes returns the inodes of the host's sockets listening
// on port hexPort (as /proc/net/tcp spells it) at any address, IPv4 or
// IPv6: any of them keeps the host from binding 127.0.0.1 there.
func hostListenerInodes(t *testing.T, hexPort string) []string {
	t.Helper()
	var inodes []string
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("read the host's %s: %v", name, err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && strings.HasSuffix(f[1], ":"+hexPort) && f[3] == "0A" {
				inodes = append(inodes, f[9])
			}
		}
	}
	return inodes
}
