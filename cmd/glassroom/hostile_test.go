package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
)

// hostileCells are what a kernel under an attacker's control sends the
// gateway: it holds the session's key and sockets, so every message is
// validly signed and routed to the running request unless noted.
var hostileCells = []struct{ name, code string }{
	{"huge frames", `k = get_ipython().kernel
big = b'x' * 50_000_000
for i in range(6):
    k.iopub_socket.send_multipart([b'', b'<IDS|MSG>', b'sig', big, big])
for i in range(4):
    k.session.send(k.iopub_socket, 'stream', {'name': 'stdout', 'text': 'y' * 30_000_000}, parent=k.get_parent('shell'))
`},
	{"lists of empty entries", `k = get_ipython().kernel
for i in range(25):
    k.session.send(k.iopub_socket, 'error', {'ename': 'E', 'evalue': 'v', 'traceback': [''] * 2_500_000}, parent=k.get_parent('shell'))
for i in range(10):
    k.session.send(k.iopub_socket, 'display_data', {'data': {str(j): '' for j in range(600_000)}, 'metadata': {}}, parent=k.get_parent('shell'))
`},
	{"input request flood", `k = get_ipython().kernel
for i in range(1500):
    k.session.send(k.stdin_socket, 'input_request', {'prompt': 'p' * 200_000, 'password': False}, parent=k.get_parent('shell'), ident=k._parent_ident['shell'])
`},
	{"queue pinning", `import threading, time
k = get_ipython().kernel
par = k.get_parent('shell')
def flood():
    payload = {'data': {'text/plain': 'q' * 7_000_000}, 'metadata': {}}
    end = time.time() + 10
    while time.time() < end:
        k.session.send(k.iopub_socket, 'display_data', payload, parent=par)
threading.Thread(target=flood, daemon=True).start()
time.sleep(10)
`},
}

type execution struct {
	Status    string `json:"status"`
	Truncated bool   `json:"truncated"`
	StateLost bool   `json:"state_lost"`
	Stdout    string `json:"stdout"`
	Reason    string `json:"reason"`
	Result    struct {
		Text string `json:"text/plain"`
	} `json:"result"`
}

// TestHostileKernelsKeepGatewayMemoryBounded runs the hostile cells in the
// real binary and measures its peak RSS: at most 256 MiB more for one
// hostile session, 1 GiB for four at once; the gateway stays healthy and
// a bystander session keeps its variables.
func TestHostileKernelsKeepGatewayMemoryBounded(t *testing.T) {
	for _, rt := range []string{"local", "docker"} {
		t.Run(rt, func(t *testing.T) {
			if rt == "docker" {
				requireDocker(t)
			}
			const key = "hostile-test-key-0123456789"
			state := stateDir(t)
			cmd, base := startBinary(t, "--runtime", rt, "--state-dir", state, "--api-key", key, "--log-level", "error",
				"--instance", "hostile-"+strconv.FormatInt(time.Now().UnixNano()%1e9, 36), "--uid-base", strconv.Itoa(testkit.UIDBase(t)), "--on-shutdown", "stop")
			pid := cmd.Process.Pid
			// Lowering an OOM score needs CAP_SYS_RESOURCE, which some
			// containers withhold even from root: check where it is granted.
			if os.WriteFile("/proc/self/oom_score_adj", []byte("-1"), 0) == nil {
				os.WriteFile("/proc/self/oom_score_adj", []byte("0"), 0)
				if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/oom_score_adj"); strings.TrimSpace(string(b)) != "-900" {
					t.Errorf("gateway oom_score_adj %q, want -900 (the OOM killer's last choice)", b)
				}
			}
			create := func() string {
				var s struct{ ID string }
				if st := api(t, base, key, "POST", "/v1/sessions", nil, &s); st != http.StatusCreated {
					t.Fatalf("create: %d", st)
				}
				return s.ID
			}
			// A hostile cell builds and signs hundreds of MB in the kernel:
			// with four at once beside the other test packages on two
			// cores that can take more than 30 s, and a cell cut by its
			// timeout proves nothing about the gateway's memory.
			exec := func(id, code string) execution {
				var x execution
				if st := api(t, base, key, "POST", "/v1/sessions/"+id+"/execute", map[string]any{"code": code, "timeout_s": 150}, &x); st != http.StatusOK {
					t.Fatalf("execute: %d", st)
				}
				return x
			}
			bystander := create()
			exec(bystander, "x = 41")
			hostile := []string{create(), create(), create(), create()}
			attack := func(id string, log bool) {
				for _, c := range hostileCells {
					x := exec(id, c.code)
					if log {
						t.Logf("after %s: peak RSS %d MiB", c.name, procStatus(t, pid, "VmHWM")>>10)
					}
					if (c.name == "huge frames" || c.name == "lists of empty entries") && !x.Truncated {
						t.Errorf("%s: not reported truncated: %+v", c.name, x)
					}
				}
				// What the kernel queued against itself drains; then the
				// session answers again.
				for try := 0; ; try++ {
					if x := exec(id, "1 + 1"); x.Result.Text == "2" {
						break
					} else if try == 10 {
						t.Errorf("hostile session unusable afterwards: %+v", x)
						break
					}
				}
			}
			resetPeak := func() int64 {
				os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
				return procStatus(t, pid, "VmRSS")
			}
			before := resetPeak()
			attack(hostile[0], true)
			one := procStatus(t, pid, "VmHWM") - before
			t.Logf("one hostile session: gateway RSS %d MiB → peak +%d MiB", before>>10, one>>10)
			if one > 256<<10 {
				t.Errorf("one hostile session grew the gateway by %d MiB (limit 256)", one>>10)
			}
			before = resetPeak()
			var wg sync.WaitGroup
			for _, id := range hostile {
				wg.Add(1)
				go func() { defer wg.Done(); attack(id, false) }()
			}
			wg.Wait()
			four := procStatus(t, pid, "VmHWM") - before
			t.Logf("four hostile sessions at once: gateway RSS %d MiB → peak +%d MiB", before>>10, four>>10)
			if four > 1<<20 {
				t.Errorf("four hostile sessions grew the gateway by %d MiB (limit 1024)", four>>10)
			}
			if st := api(t, base, key, "GET", "/healthz", nil, nil); st != http.StatusOK {
				t.Fatalf("health: %d", st)
			}
			if x := exec(bystander, "x + 1"); x.Result.Text != "42" {
				t.Fatalf("bystander lost its variables: %+v", x)
			}
			fmt.Fprintln(os.Stderr) // separate the runtimes' logs
		})
	}
}
