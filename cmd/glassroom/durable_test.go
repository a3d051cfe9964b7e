package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
	"github.com/gorilla/websocket"
)

// durableGateway runs the real binary on the docker runtime with a state
// dir and instance of the test's own, and restarts it on demand.
type durableGateway struct {
	t        *testing.T
	args     []string
	env      []string // added to the environment (DOCKER_HOST)
	cmd      *exec.Cmd
	base     string
	key      string
	instance string
}

func newDurableGateway(t *testing.T, extra ...string) *durableGateway {
	return newDurableGatewayEnv(t, nil, extra...)
}

// newDurableGatewayEnv is newDurableGateway with env added to the
// gateway's environment (DOCKER_HOST for another engine).
func newDurableGatewayEnv(t *testing.T, env []string, extra ...string) *durableGateway {
	requireDocker(t)
	g := &durableGateway{t: t, env: env, key: "durable-test-key-0123456789", instance: "durable-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)}
	g.args = append([]string{"--runtime", "docker", "--state-dir", stateDir(t), "--instance", g.instance,
		"--api-key", g.key, "--metrics-token", durableMetricsToken, "--log-level", "warn", "--uid-base", strconv.Itoa(testkit.UIDBase(t))}, extra...)
	g.start()
	t.Cleanup(func() { // whatever the test left: stop every kernel
		g.stop(syscall.SIGTERM)
		cmd, _ := startBinaryEnv(t, g.env, append(g.args, "--on-shutdown", "stop")...)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	return g
}

func (g *durableGateway) start() { g.cmd, g.base = startBinaryEnv(g.t, g.env, g.args...) }

// durableMetricsToken is the durable gateways' --metrics-token.
const durableMetricsToken = "durable-metrics-token-0123456789"

// flushes reads how many times the gateway has written its session
// store (glassroom_store_flushes_total on /metrics).
func (g *durableGateway) flushes() int {
	g.t.Helper()
	req, _ := http.NewRequest("GET", g.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+durableMetricsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "glassroom_store_flushes_total "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				g.t.Fatalf("flushes: %q", line)
			}
			return int(n)
		}
	}
	g.t.Fatalf("no glassroom_store_flushes_total on /metrics (%d): %.300s", resp.StatusCode, body)
	return 0
}

func (g *durableGateway) stop(sig syscall.Signal) {
	if g.cmd.ProcessState == nil {
		g.cmd.Process.Signal(sig)
		g.cmd.Wait()
	}
}

func (g *durableGateway) exec(id, code string) execution {
	g.t.Helper()
	var x execution
	if st := api(g.t, g.base, g.key, "POST", "/v1/sessions/"+id+"/execute", map[string]any{"code": code}, &x); st != http.StatusOK {
		g.t.Fatalf("execute in %s: %d", id, st)
	}
	return x
}

// TestGatewaySIGKILLKeepsEverySession: ten docker sessions hold variables
// and files; the gateway is SIGKILLed and started again; all ten answer
// x + 1 with their own values and keep their files, and an execution that
// was running when the gateway died is reported with status unknown.
func TestGatewaySIGKILLKeepsEverySession(t *testing.T) {
	g := newDurableGateway(t)
	var ids []string
	for i := 0; i < 10; i++ {
		var s struct{ ID string }
		if st := api(t, g.base, g.key, "POST", "/v1/sessions", nil, &s); st != http.StatusCreated {
			t.Fatalf("create: %d", st)
		}
		ids = append(ids, s.ID)
		g.exec(s.ID, fmt.Sprintf("x = %d\nopen('own.txt', 'w').write('session %d')", 100*i+1, i))
	}
	// A long execution, running when the gateway dies.
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(g.base, "http")+"/v1/sessions/"+ids[0]+"/ws?token="+g.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.WriteJSON(map[string]any{"type": "execute", "id": "long-one", "code": "import time; time.sleep(5); z = 5"})
	for {
		var ev struct{ Type, ID string }
		if err := ws.ReadJSON(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "started" && ev.ID == "long-one" {
			break
		}
	}
	// Two flushes after "started": the second began after it, so the
	// store holds the running execution.
	seen := g.flushes()
	testkit.Eventually(t, 30*time.Second, func() bool { return g.flushes() >= seen+2 }, "the session store to be flushed twice after the execution started")
	g.stop(syscall.SIGKILL)
	ws.Close()
	g.start()
	for i, id := range ids {
		x := g.exec(id, "x + 1")
		if want := strconv.Itoa(100*i + 2); x.Result.Text != want {
			t.Errorf("session %d after the crash: x + 1 = %q (%+v), want %s", i, x.Result.Text, x, want)
		}
		status, body := getFile(t, g, id, "own.txt")
		if status != http.StatusOK || body != fmt.Sprintf("session %d", i) {
			t.Errorf("session %d's file after the crash: %d %q", i, status, body)
		}
	}
	// The interrupted execution finished in the kernel (z exists) and is
	// reported as unknown to a client that resumes from the start.
	if x := g.exec(ids[0], "z"); x.Result.Text != "5" {
		t.Errorf("the running execution did not finish in the kernel: %+v", x)
	}
	ws, _, err = websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(g.base, "http")+"/v1/sessions/"+ids[0]+"/ws?since=0&token="+g.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var ev struct{ Type, ID, Status, Reason string }
		if err := ws.ReadJSON(&ev); err != nil {
			t.Fatalf("no done for the running execution: %v", err)
		}
		if ev.Type == "done" && ev.ID == "long-one" {
			if ev.Status != "unknown" || !strings.Contains(ev.Reason, "gateway restarted") {
				t.Fatalf("done of the execution the crash interrupted: %+v", ev)
			}
			break
		}
	}
}

// TestGatewayUpgradeKeepsKernels: SIGTERM (the default --on-shutdown keep)
// lets kernels run on; --on-shutdown stop ends them.
func TestGatewayUpgradeKeepsKernels(t *testing.T) {
	g := newDurableGateway(t)
	var s struct{ ID string }
	api(t, g.base, g.key, "POST", "/v1/sessions", nil, &s)
	g.exec(s.ID, "kept = 'yes'")
	g.stop(syscall.SIGTERM)
	g.start()
	if x := g.exec(s.ID, "kept"); x.Result.Text != "'yes'" {
		t.Fatalf("after a SIGTERM upgrade: %+v", x)
	}
	g.args = append(g.args, "--on-shutdown", "stop")
	g.stop(syscall.SIGTERM) // still the default: keep
	g.start()               // now with stop
	g.stop(syscall.SIGTERM)
	out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=io.glassroom.instance="+g.instance).CombinedOutput()
	if strings.TrimSpace(string(out)) != "" {
		t.Fatalf("--on-shutdown stop left containers: %s", out)
	}
}

// TestGatewayRestartKeepsSessionNetwork: a docker session with an egress
// allowlist keeps reaching its destination (an HTTP server on host
// loopback) through its proxy after a SIGTERM upgrade and after a SIGKILL:
// the new gateway resumes the proxy in the directory the container binds.
func TestGatewayRestartKeepsSessionNetwork(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached "+r.URL.Path) }))
	defer up.Close()
	port := up.Listener.Addr().(*net.TCPAddr).Port
	g := newDurableGateway(t, "--egress-allow", "127.0.0.1:*", "--egress-allow-private", "127.0.0.1/32")
	var s struct{ ID string }
	if st := api(t, g.base, g.key, "POST", "/v1/sessions", map[string]any{"network": map[string]any{"allow": []string{fmt.Sprintf("127.0.0.1:%d", port)}}}, &s); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	fetch := fmt.Sprintf(`import http.client
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=20)
c.request("GET", "http://127.0.0.1:%d/%%s" %% step)
r = c.getresponse()
print(r.status, r.read().decode())`, port)
	check := func(step string) {
		t.Helper()
		x := g.exec(s.ID, "step = '"+step+"'\n"+fetch)
		if want := "200 reached /" + step; strings.TrimSpace(x.Stdout) != want {
			t.Fatalf("%s: %+v, want %q", step, x, want)
		}
	}
	check("first")
	g.stop(syscall.SIGTERM)
	g.start()
	check("after-upgrade")
	g.stop(syscall.SIGKILL)
	g.start()
	check("after-crash")
	var info struct{ Network struct{ Allow []string } }
	if api(t, g.base, g.key, "GET", "/v1/sessions/"+s.ID, nil, &info); len(info.Network.Allow) != 1 {
		t.Errorf("the restored session's network: %+v", info)
	}
	// Closed (an empty allowlist) across a restart: the proxy is resumed
	// refusing everything, so the network can be opened again after.
	patch := func(allow []string) {
		t.Helper()
		if st := api(t, g.base, g.key, "PATCH", "/v1/sessions/"+s.ID, map[string]any{"network": map[string]any{"allow": allow}}, nil); st != http.StatusOK {
			t.Fatalf("PATCH network %v: %d", allow, st)
		}
	}
	patch([]string{})
	g.stop(syscall.SIGTERM)
	g.start()
	var closed struct{ Network *struct{ Allow []string } }
	if api(t, g.base, g.key, "GET", "/v1/sessions/"+s.ID, nil, &closed); closed.Network == nil || len(closed.Network.Allow) != 0 {
		t.Fatalf("the closed network after a restart: %+v", closed.Network)
	}
	patch([]string{fmt.Sprintf("127.0.0.1:%d", port)})
	check("reopened")
}

// TestPausedSessionsSurviveRestarts: a session whose idle kernel is
// frozen is thawed when its gateway stops for an upgrade, and unpaused by
// the gateway that adopts it after a SIGKILL left it frozen.
func TestPausedSessionsSurviveRestarts(t *testing.T) {
	g := newDurableGateway(t, "--pause-after", "300ms")
	var s struct{ ID string }
	api(t, g.base, g.key, "POST", "/v1/sessions", nil, &s)
	g.exec(s.ID, "x = 1")
	waitPaused := func() {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var info struct{ Paused bool }
			api(t, g.base, g.key, "GET", "/v1/sessions/"+s.ID, nil, &info)
			if info.Paused {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the session never paused")
			}
		}
	}
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		waitPaused()
		g.stop(sig)
		g.start()
		if x := g.exec(s.ID, "x = x + 1; x"); x.Result.Text != strconv.Itoa(i+2) {
			t.Fatalf("after %v of a gateway whose session was paused: %+v", sig, x)
		}
	}
}

func getFile(t *testing.T, g *durableGateway, id, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", g.base+"/v1/sessions/"+id+"/files/"+path, nil)
	req.Header.Set("Authorization", "Bearer "+g.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestFailedStartKeepsSessions: a gateway that cannot start (here an API
// key too short, which the gateway refuses) leaves the previous gateway's
// sessions alone: the next good start adopts them, variables included.
func TestFailedStartKeepsSessions(t *testing.T) {
	g := newDurableGateway(t)
	var s struct{ ID string }
	api(t, g.base, g.key, "POST", "/v1/sessions", nil, &s)
	g.exec(s.ID, "kept = 'yes'")
	g.stop(syscall.SIGTERM)
	bad := exec.Command(gatewayBinary(t), append([]string{"serve", "--listen", "127.0.0.1:0"}, append(g.args, "--api-key", "short")...)...)
	bad.Env = append(os.Environ(), g.env...)
	out, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "API keys must be at least 16 characters") {
		t.Fatalf("a start with a short key: %v\n%s", err, out)
	}
	g.start()
	if x := g.exec(s.ID, "kept"); x.Result.Text != "'yes'" {
		t.Fatalf("after a failed start: %+v", x)
	}
}

// TestJupyterSessionsSurviveACrash: Jupyter sessions (/api/sessions), one
// renamed and two on one kernel, are kept with their kernel's record at
// once: the gateway is SIGKILLed right after the changes and started
// again, and the sessions are listed as they were, on the same kernel,
// its variables kept.
func TestJupyterSessionsSurviveACrash(t *testing.T) {
	g := newDurableGateway(t)
	type session struct {
		ID, Path, Name, Type string
		Kernel               struct{ ID, Name string }
	}
	var nb, console session
	if st := api(t, g.base, g.key, "POST", "/api/sessions", map[string]any{"path": "kept.ipynb", "type": "notebook", "name": "kept.ipynb",
		"kernel": map[string]string{"name": "python3"}}, &nb); st != http.StatusCreated {
		t.Fatalf("create: %d %+v", st, nb)
	}
	if st := api(t, g.base, g.key, "POST", "/api/sessions", map[string]any{"path": "console-1", "type": "console",
		"kernel": map[string]string{"id": nb.Kernel.ID}}, &console); st != http.StatusCreated || console.Kernel.ID != nb.Kernel.ID {
		t.Fatalf("create on the same kernel: %d %+v", st, console)
	}
	if st := api(t, g.base, g.key, "PATCH", "/api/sessions/"+nb.ID, map[string]any{"path": "renamed.ipynb", "name": "renamed.ipynb"}, &nb); st != http.StatusOK {
		t.Fatalf("rename: %d", st)
	}
	g.exec(strings.ReplaceAll(nb.Kernel.ID, "-", ""), "kept = 'yes'")
	g.stop(syscall.SIGKILL)
	g.start()
	var list []session
	if st := api(t, g.base, g.key, "GET", "/api/sessions", nil, &list); st != http.StatusOK || len(list) != 2 {
		t.Fatalf("sessions after the crash: %d %+v", st, list)
	}
	byID := map[string]session{list[0].ID: list[0], list[1].ID: list[1]}
	if got := byID[nb.ID]; got.Path != "renamed.ipynb" || got.Name != "renamed.ipynb" || got.Type != "notebook" || got.Kernel.ID != nb.Kernel.ID {
		t.Errorf("the notebook's session after the crash: %+v, was %+v", got, nb)
	}
	if got := byID[console.ID]; got.Path != "console-1" || got.Type != "console" || got.Kernel.ID != nb.Kernel.ID {
		t.Errorf("the console's session after the crash: %+v, was %+v", got, console)
	}
	if x := g.exec(strings.ReplaceAll(nb.Kernel.ID, "-", ""), "kept"); x.Result.Text != "'yes'" {
		t.Errorf("the kernel's variables after the crash: %+v", x)
	}
	if st := api(t, g.base, g.key, "DELETE", "/api/sessions/"+console.ID, nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	if st := api(t, g.base, g.key, "GET", "/api/sessions", nil, &list); st != http.StatusOK || len(list) != 0 {
		t.Fatalf("sessions after the delete: %d %+v", st, list)
	}
}

// TestPausedAtTimeoutSurvivesRestarts: a session its lifecycle paused at
// its timeout, a command still running in it, is still paused after its
// gateway stops (SIGTERM: the stop thaws the sandbox to end its commands,
// and does not hang on them) and after a SIGKILL, each time started
// again; no use thaws it, and its resume finds its variables.
func TestPausedAtTimeoutSurvivesRestarts(t *testing.T) {
	g := newDurableGateway(t)
	var s struct{ ID string }
	api(t, g.base, g.key, "POST", "/v1/sessions", map[string]any{"lifetime_s": 300, "lifecycle": map[string]any{"on_timeout": "pause"}}, &s)
	g.exec(s.ID, "x = 41")
	var info struct {
		PausedAtTimeout bool `json:"paused_at_timeout"`
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if st := api(t, g.base, g.key, "POST", "/v1/sessions/"+s.ID+"/commands", map[string]any{"cmd": "sleep 600", "background": true}, nil); st != http.StatusCreated {
			t.Fatalf("start a command: %d", st)
		}
		api(t, g.base, g.key, "PATCH", "/v1/sessions/"+s.ID, map[string]any{"lifetime_s": 0}, nil)
		testkit.Eventually(t, time.Minute, func() bool {
			info.PausedAtTimeout = false // absent when false
			api(t, g.base, g.key, "GET", "/v1/sessions/"+s.ID, nil, &info)
			return info.PausedAtTimeout
		}, "the session paused at its timeout")
		// Two flushes after the pause was seen: the second wrote it.
		seen := g.flushes()
		testkit.Eventually(t, 30*time.Second, func() bool { return g.flushes() >= seen+2 }, "the session store to be flushed twice after the pause")
		g.stop(sig)
		g.start()
		info.PausedAtTimeout = false
		if st := api(t, g.base, g.key, "GET", "/v1/sessions/"+s.ID, nil, &info); st != http.StatusOK || !info.PausedAtTimeout {
			t.Fatalf("after %v: %d, paused at its timeout %v", sig, st, info.PausedAtTimeout)
		}
		var refused struct{ Error struct{ Code string } }
		if st := api(t, g.base, g.key, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]string{"code": "x"}, &refused); st != http.StatusConflict || refused.Error.Code != "session_paused" {
			t.Fatalf("an execution of the paused session after %v: %d %+v", sig, st, refused)
		}
		if st := api(t, g.base, g.key, "POST", "/v1/sessions/"+s.ID+"/resume", nil, nil); st != http.StatusOK {
			t.Fatalf("resume: %d", st)
		}
		if x := g.exec(s.ID, "x += 1; x"); x.Result.Text == "" {
			t.Fatalf("after the resume: %+v", x)
		}
	}
	if x := g.exec(s.ID, "x"); x.Result.Text != "43" {
		t.Fatalf("the variable after two restarts: %+v", x)
	}
}

// TestHibernatedSessionSurvivesSIGKILL: a session whose lifecycle
// hibernates it does so once idle; the gateway is killed (SIGKILL) and
// started again; the session is still listed hibernated, and its next
// execution wakes it with its variables.
func TestHibernatedSessionSurvivesSIGKILL(t *testing.T) {
	g := newDurableGateway(t)
	var s struct{ ID string }
	api(t, g.base, g.key, "POST", "/v1/sessions", map[string]any{"idle_timeout_s": 2,
		"lifecycle": map[string]any{"on_timeout": "pause", "auto_resume": true, "keep_memory": false}}, &s)
	g.exec(s.ID, "x = 41")
	var info struct{ State string }
	testkit.Eventually(t, time.Minute, func() bool {
		api(t, g.base, g.key, "GET", "/v1/sessions/"+s.ID, nil, &info)
		return info.State == "hibernated"
	}, "the session hibernated")
	g.stop(syscall.SIGKILL)
	g.start()
	if st := api(t, g.base, g.key, "GET", "/v1/sessions/"+s.ID, nil, &info); st != http.StatusOK || info.State != "hibernated" {
		t.Fatalf("after the restart: %d %+v", st, info)
	}
	if x := g.exec(s.ID, "x + 1"); x.Result.Text != "42" {
		t.Fatalf("the woken session: %+v", x)
	}
}
