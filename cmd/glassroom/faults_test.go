//go:build heavy

package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The fault suite: the real gateway on the docker runtime, a bystander
// session holding a variable, and one fault at a time done to another
// session from outside. After each, the gateway is healthy, the bystander
// keeps its variable, and the affected session says what happened (a
// kernel event with the reason, then a working kernel). It runs after the
// other suites, alone (make test-heavy): the engine restart restarts a
// Docker engine of its own. The gateway's own SIGKILL is
// TestGatewaySIGKILLKeepsEverySession.

type faultRig struct {
	*durableGateway
	bystander string
}

func newFaultRig(t *testing.T, env []string, extra ...string) *faultRig {
	g := newDurableGatewayEnv(t, env, extra...)
	r := &faultRig{durableGateway: g}
	r.bystander = r.create(nil)
	r.exec(r.bystander, "kept = 'bystander'")
	return r
}

func (r *faultRig) create(body any) string {
	r.t.Helper()
	var s struct{ ID string }
	if st := api(r.t, r.base, r.key, "POST", "/v1/sessions", body, &s); st != http.StatusCreated {
		r.t.Fatalf("create: %d", st)
	}
	return s.ID
}

func (r *faultRig) container(id string) string { return "glassroom-" + r.instance + "-" + id }

// healthy checks the gateway and the bystander.
func (r *faultRig) healthy() {
	r.t.Helper()
	if st := api(r.t, r.base, r.key, "GET", "/healthz", nil, nil); st != http.StatusOK {
		r.t.Fatalf("healthz %d", st)
	}
	if x := r.exec(r.bystander, "kept"); x.Result.Text != "'bystander'" {
		r.t.Fatalf("the bystander lost its variable: %+v", x)
	}
}

// kernelEvents follows a session's events; next returns the next kernel
// event whose reason contains want.
type kernelEvents struct {
	t  *testing.T
	ws *websocket.Conn
}

type sessionEvent struct {
	Type, State, Reason, ID, Status string
}

func (r *faultRig) follow(id string) *kernelEvents {
	r.t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(r.base, "http")+"/v1/sessions/"+id+"/ws?token="+r.key, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { ws.Close() })
	return &kernelEvents{t: r.t, ws: ws}
}

func (k *kernelEvents) next(want string) sessionEvent {
	k.t.Helper()
	k.ws.SetReadDeadline(time.Now().Add(90 * time.Second))
	var seen []string
	for {
		var ev sessionEvent
		if err := k.ws.ReadJSON(&ev); err != nil {
			k.t.Fatalf("no kernel event about %q (saw %q): %v", want, seen, err)
		}
		if ev.Type != "kernel" {
			continue
		}
		seen = append(seen, ev.State+": "+ev.Reason)
		if strings.Contains(ev.Reason, want) {
			return ev
		}
	}
}

// afterLoss checks a session whose kernel was lost: its variables are gone
// (it says so with a NameError, not a hang), its files are kept, and it
// runs code again.
func (r *faultRig) afterLoss(id string) {
	r.t.Helper()
	if x := r.exec(id, "victim"); x.Status != "error" {
		r.t.Fatalf("variables after the kernel was lost: %+v", x)
	}
	if st, body := getFile(r.t, r.durableGateway, id, "kept.txt"); st != http.StatusOK || body != "file" {
		r.t.Fatalf("files after the kernel was lost: %d %q", st, body)
	}
	if x := r.exec(id, "1 + 1"); x.Result.Text != "2" {
		r.t.Fatalf("after the loss: %+v", x)
	}
}

func (r *faultRig) victim(body any) string {
	id := r.create(body)
	r.exec(id, "victim = 1\nopen('kept.txt', 'w').write('file')")
	return id
}

func TestFaultKernelKilledFromOutside(t *testing.T) {
	r := newFaultRig(t, nil)
	id := r.victim(nil)
	ev := r.follow(id)
	out, err := exec.Command("docker", "top", r.container(id), "-eo", "pid,args").CombinedOutput()
	if err != nil {
		t.Fatalf("docker top: %v %s", err, out)
	}
	pid := 0
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.Contains(line, "ipykernel") {
			pid, _ = strconv.Atoi(f[0])
		}
	}
	if pid == 0 {
		t.Fatalf("no kernel process in %s", out)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e := ev.next("killed by SIGKILL")
	t.Logf("the session said: %s: %s", e.State, e.Reason)
	r.afterLoss(id)
	r.healthy()
}

func TestFaultOOM(t *testing.T) {
	r := newFaultRig(t, nil)
	id := r.victim(map[string]any{"limits": map[string]any{"memory_mb": 256}})
	x := r.exec(id, "hog = bytearray(1 << 30)")
	if x.Status != "died" || !x.StateLost || !strings.Contains(x.Reason, "OOMKilled") {
		t.Fatalf("the execution that ran out of memory: %+v", x)
	}
	r.afterLoss(id)
	r.healthy()
}

func TestFaultContainerRemoved(t *testing.T) {
	r := newFaultRig(t, nil)
	id := r.victim(nil)
	ev := r.follow(id)
	if out, err := exec.Command("docker", "rm", "-f", r.container(id)).CombinedOutput(); err != nil {
		t.Fatalf("docker rm: %v %s", err, out)
	}
	e := ev.next("removed from outside")
	t.Logf("the session said: %s: %s", e.State, e.Reason)
	r.afterLoss(id)
	r.healthy()
}

func TestFaultContainerRestarted(t *testing.T) {
	r := newFaultRig(t, nil)
	id := r.victim(nil)
	ev := r.follow(id)
	if out, err := exec.Command("docker", "restart", "-t", "1", r.container(id)).CombinedOutput(); err != nil {
		t.Fatalf("docker restart: %v %s", err, out)
	}
	e := ev.next("stopped or restarted from outside") // SIGTERM, or exit code 0 when the kernel handled it
	t.Logf("the session said: %s: %s", e.State, e.Reason)
	r.afterLoss(id)
	r.healthy()
}

// TestFaultClientDroppedMidRun: a WebSocket client that vanishes while its
// execution runs costs nothing: the execution finishes in the kernel and a
// client that comes back reads how it ended.
func TestFaultClientDroppedMidRun(t *testing.T) {
	r := newFaultRig(t, nil)
	id := r.victim(nil)
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(r.base, "http")+"/v1/sessions/"+id+"/ws?token="+r.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.WriteJSON(map[string]any{"type": "execute", "id": "dropped", "code": "import time; time.sleep(1.5); y = 7; print('finished')"})
	for {
		var e sessionEvent
		if err := ws.ReadJSON(&e); err != nil {
			t.Fatal(err)
		}
		if e.Type == "started" && e.ID == "dropped" {
			break
		}
	}
	ws.UnderlyingConn().Close() // no close frame: the client just vanishes
	if x := r.exec(id, "y"); x.Result.Text != "7" {
		t.Fatalf("the dropped client's execution did not finish: %+v", x)
	}
	back, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(r.base, "http")+"/v1/sessions/"+id+"/ws?since=0&token="+r.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	back.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var e sessionEvent
		if err := back.ReadJSON(&e); err != nil {
			t.Fatalf("the returning client never read how the execution ended: %v", err)
		}
		if e.Type == "done" && e.ID == "dropped" {
			if e.Status != "ok" {
				t.Fatalf("done %+v", e)
			}
			break
		}
	}
	r.healthy()
}

// TestFaultEngineRestarted restarts a Docker engine of the test's own
// (its own socket, data and exec roots; the kernel image loaded into it):
// with live-restore, kernels run through the restart and keep their
// variables; without it, the engine stops them, and each session restarts
// its kernel once the engine is back, files kept.
func TestFaultEngineRestarted(t *testing.T) {
	requireDocker(t)
	eng := startEngine(t)
	for _, live := range []bool{true, false} {
		t.Run("live-restore="+strconv.FormatBool(live), func(t *testing.T) {
			eng.restart(t, live)
			r := newFaultRig(t, []string{"DOCKER_HOST=unix://" + eng.sock})
			id := r.victim(nil)
			ev := r.follow(id)
			eng.restart(t, live)
			if live {
				if x := r.exec(id, "victim + 1"); x.Result.Text != "2" {
					t.Fatalf("after a live-restore engine restart: %+v", x)
				}
			} else {
				e := ev.next("its engine stopped it")
				t.Logf("the session said: %s: %s", e.State, e.Reason)
				r.afterLoss(id)
				// The bystander's kernel was stopped too: it says so, and runs
				// again, variables lost.
				if x := r.exec(r.bystander, "kept"); x.Status != "error" {
					t.Fatalf("the bystander's kernel survived an engine that stopped it: %+v", x)
				}
				r.bystander = r.create(nil)
				r.exec(r.bystander, "kept = 'bystander'")
			}
			r.healthy()
		})
	}
}

// engine is a Docker engine of the test's own.
type engine struct {
	dir, sock string
	cmd       *exec.Cmd
}

func startEngine(t *testing.T) *engine {
	dir, err := os.MkdirTemp("/tmp", "gr-engine-")
	if err != nil {
		t.Fatal(err)
	}
	e := &engine{dir: dir, sock: filepath.Join(dir, "docker.sock")}
	e.start(t, true)
	t.Cleanup(func() {
		out, _ := exec.Command("docker", "-H", "unix://"+e.sock, "ps", "-aq").Output()
		for _, id := range strings.Fields(string(out)) {
			exec.Command("docker", "-H", "unix://"+e.sock, "rm", "-f", id).Run()
		}
		e.stop(t)
		exec.Command("umount", "-R", "-l", filepath.Join(dir, "exec")).Run()
		exec.Command("umount", "-R", "-l", filepath.Join(dir, "data")).Run()
		os.RemoveAll(dir)
	})
	// The kernel image, from the machine's engine (a few seconds).
	save := exec.Command("docker", "save", "glassroom/python-kernel:latest")
	load := exec.Command("docker", "-H", "unix://"+e.sock, "load")
	pipe, _ := save.StdoutPipe()
	load.Stdin = pipe
	if err := save.Start(); err != nil {
		t.Fatal(err)
	}
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("docker load: %v %s", err, out)
	}
	if err := save.Wait(); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *engine) start(t *testing.T, live bool) {
	t.Helper()
	args := []string{"-H", "unix://" + e.sock, "--data-root", filepath.Join(e.dir, "data"), "--exec-root", filepath.Join(e.dir, "exec"),
		"--pidfile", filepath.Join(e.dir, "docker.pid"), "--bridge", "none", "--iptables=false", "--ip6tables=false",
		"--storage-driver", "overlay2", "--config-file", filepath.Join(e.dir, "daemon.json")}
	if live {
		args = append(args, "--live-restore")
	}
	os.WriteFile(filepath.Join(e.dir, "daemon.json"), []byte("{}"), 0o644)
	log, err := os.OpenFile(filepath.Join(e.dir, "dockerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	e.cmd = exec.Command("dockerd", args...)
	e.cmd.Stdout, e.cmd.Stderr = log, log
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := e.cmd.Start(); err != nil {
		t.Fatalf("dockerd: %v", err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if exec.Command("docker", "-H", "unix://"+e.sock, "info").Run() == nil {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(e.dir, "dockerd.log"))
			t.Fatalf("the test's engine did not start: %s", b)
		}
	}
}

func (e *engine) stop(t *testing.T) {
	t.Helper()
	if e.cmd == nil {
		return
	}
	e.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		e.cmd.Process.Kill()
		<-done
	}
	e.cmd = nil
}

// restart stops the engine and starts it again, with or without
// live-restore.
func (e *engine) restart(t *testing.T, live bool) {
	t.Helper()
	e.stop(t)
	e.start(t, live)
}
