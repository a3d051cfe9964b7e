package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/k8s/k8stest"
	"github.com/glassroom/glassroom/testkit"
	"github.com/gorilla/websocket"
)

// TestToolboxOnARealCluster: what a session does on one machine it does
// on the real cluster (the real binary, --runtime k8s): a Bash session
// whose pod also runs JavaScript and Python contexts, each keeping its
// own variables; a shell command as the session's user; a files-watch
// socket that hears a command's write; metrics from the pod (memory in
// use, the workspace's bytes, and their history); a preview of a server
// a command starts in the pod, carried through the pod's agent, and that
// command's pid, the pod's own; the pod's own files outside the
// workspace, read-only; a session paused at its timeout and resumed by
// its use; and pause (executions refused) and resume.
func TestToolboxOnARealCluster(t *testing.T) {
	_, namespace := k8stest.RealCluster(t)
	const key = "toolbox-test-key-0123456789"
	previewAddr := freeLoopbackAddr(t)
	_, base := startBinary(t, "--runtime", "k8s", "--kubeconfig", k8stest.Kubeconfig(), "--k8s-namespace", namespace,
		"--instance", "gw-toolbox", "--api-key", key, "--log-level", "warn", "--state-dir", t.TempDir(),
		"--k8s-seccomp-profile", "glassroom-kernel.json", "--cpus", "1", "--memory-mb", "2048", "--preview-listen", previewAddr)

	var s struct{ ID string }
	if st := api(t, base, key, "POST", "/v1/sessions", map[string]any{"language": "bash"}, &s); st != http.StatusCreated {
		t.Fatalf("create a bash session: %d", st)
	}
	run := func(body map[string]any) execution {
		t.Helper()
		var x execution
		if st := api(t, base, key, "POST", "/v1/sessions/"+s.ID+"/execute", body, &x); st != http.StatusOK || x.Status != "ok" {
			t.Fatalf("execute %v: %d %+v", body, st, x)
		}
		return x
	}
	if x := run(map[string]any{"code": "n=41; echo $((n + 1))"}); x.Stdout != "42\n" {
		t.Fatalf("bash: %+v", x)
	}
	run(map[string]any{"code": "var n = 40", "language": "javascript"})
	run(map[string]any{"code": "n = 39", "language": "python3"})
	if x := run(map[string]any{"code": "console.log(n + 2)", "language": "javascript"}); x.Stdout != "42\n" {
		t.Fatalf("javascript context: %+v", x)
	}
	if x := run(map[string]any{"code": "print(n + 3)", "language": "python3"}); x.Stdout != "42\n" {
		t.Fatalf("python context: %+v", x)
	}
	if x := run(map[string]any{"code": "echo $n"}); x.Stdout != "41\n" {
		t.Fatalf("bash after the contexts: %+v", x)
	}

	var cmd struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	}
	if st := api(t, base, key, "POST", "/v1/sessions/"+s.ID+"/commands", map[string]any{"cmd": "echo hi; id -un; pwd"}, &cmd); st != http.StatusOK ||
		cmd.ExitCode != 0 || cmd.Stdout != "hi\nsandbox\n/home/user\n" {
		t.Fatalf("command: %d %+v", st, cmd)
	}

	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/v1/sessions/"+s.ID+"/files-watch?path=&recursive=true&token="+key, nil)
	if err != nil {
		t.Fatalf("files-watch: %v", err)
	}
	defer ws.Close()
	if st := api(t, base, key, "POST", "/v1/sessions/"+s.ID+"/commands", map[string]any{"cmd": "head -c 1000000 /dev/zero > big.bin"}, &cmd); st != http.StatusOK || cmd.ExitCode != 0 {
		t.Fatalf("command that writes: %d %+v", st, cmd)
	}
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var ev struct{ Type, Name string }
		if err := ws.ReadJSON(&ev); err != nil {
			t.Fatalf("the watch heard nothing of the command's write: %v", err)
		}
		if ev.Name == "big.bin" && (ev.Type == "create" || ev.Type == "write") {
			break
		}
	}
	// A sync after another write: its answer comes after the write's
	// events (the agent marks its watch in the pod).
	if st := api(t, base, key, "POST", "/v1/sessions/"+s.ID+"/commands", map[string]any{"cmd": "echo x > second.txt"}, &cmd); st != http.StatusOK || cmd.ExitCode != 0 {
		t.Fatalf("second write: %d %+v", st, cmd)
	}
	if err := ws.WriteJSON(map[string]string{"type": "sync", "id": "s1"}); err != nil {
		t.Fatal(err)
	}
	for wrote := false; ; {
		var ev struct{ Type, Name, ID string }
		if err := ws.ReadJSON(&ev); err != nil {
			t.Fatalf("no answer to the sync: %v", err)
		}
		if ev.Name == "second.txt" {
			wrote = true
		}
		if ev.Type == "synced" {
			if ev.ID != "s1" || !wrote {
				t.Fatalf("synced %+v before the write's events", ev)
			}
			break
		}
	}

	var m struct {
		MemUsed  int64 `json:"mem_used"`
		MemTotal int64 `json:"mem_total"`
		DiskUsed int64 `json:"disk_used"`
	}
	if st := api(t, base, key, "GET", "/v1/sessions/"+s.ID+"/metrics", nil, &m); st != http.StatusOK ||
		m.MemUsed < 20<<20 || m.MemTotal != 2048<<20 || m.DiskUsed < 1000000 {
		t.Fatalf("metrics: %d %+v", st, m)
	}

	var hist struct {
		Samples []struct {
			MemUsed int64 `json:"mem_used"`
		}
	}
	if st := api(t, base, key, "GET", "/v1/sessions/"+s.ID+"/metrics/history", nil, &hist); st != http.StatusOK ||
		len(hist.Samples) < 1 || hist.Samples[len(hist.Samples)-1].MemUsed < 20<<20 {
		t.Fatalf("metrics history (now's sample, which replaced the call's above): %d %+v", st, hist)
	}

	// A server a command starts in the pod, reached through its preview.
	var started struct{ PID int }
	if st := api(t, base, key, "POST", "/v1/sessions/"+s.ID+"/commands", map[string]any{"background": true,
		"cmd": "mkdir -p site && echo hello-from-the-pod > site/index.html && cd site && exec python3 -m http.server 8000"}, &started); st != http.StatusCreated {
		t.Fatalf("start a server: %d", st)
	}
	if st := api(t, base, key, "POST", "/v1/sessions/"+s.ID+"/commands", map[string]any{"cmd": "kill -0 " + strconv.Itoa(started.PID)}, &cmd); st != http.StatusOK || cmd.ExitCode != 0 {
		t.Fatalf("the server's pid %d is not the pod's: %d %+v", started.PID, st, cmd)
	}
	testkit.Eventually(t, time.Minute, func() bool {
		var ports struct{ Ports []struct{ Port int } }
		api(t, base, key, "GET", "/v1/sessions/"+s.ID+"/ports", nil, &ports)
		return slices.ContainsFunc(ports.Ports, func(p struct{ Port int }) bool { return p.Port == 8000 })
	}, "port 8000 in the pod's list")
	var preview struct{ Host string }
	if st := api(t, base, key, "POST", "/v1/sessions/"+s.ID+"/previews", map[string]any{"port": 8000}, &preview); st != http.StatusOK {
		t.Fatalf("preview: %d", st)
	}
	req, _ := http.NewRequest("GET", "http://"+previewAddr+"/index.html", nil)
	req.Host = preview.Host
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(page) != "hello-from-the-pod\n" {
		t.Fatalf("the preview of the pod's server: %d %q", resp.StatusCode, page)
	}

	// The pod's own files outside the workspace, read-only, as its user
	// sees them (a command in the pod reads them).
	status, err := rawGet(base, key, "/v1/sessions/"+s.ID+"/sandbox-files?path=/proc/self/status")
	if err != nil || !strings.Contains(status, "\nUid:\t") || strings.Contains(status, "\nUid:\t0\t") {
		t.Fatalf("/proc/self/status of the pod: %v %.300q", err, status)
	}
	var etc struct{ Type, Path string }
	if st := api(t, base, key, "GET", "/v1/sessions/"+s.ID+"/sandbox-files/info?path=/etc/../etc", nil, &etc); st != http.StatusOK || etc.Type != "dir" || etc.Path != "/etc" {
		t.Fatalf("/etc of the pod: %d %+v", st, etc)
	}

	// A session whose lifecycle pauses it at its timeout; its next use
	// resumes it (auto_resume).
	var p struct{ ID string }
	if st := api(t, base, key, "POST", "/v1/sessions", map[string]any{"lifetime_s": 300, "limits": map[string]any{"cpus": 0.25, "memory_mb": 512}, "lifecycle": map[string]any{"on_timeout": "pause", "auto_resume": true}}, &p); st != http.StatusCreated {
		t.Fatalf("create a session that pauses at its timeout: %d", st)
	}
	var px execution
	if st := api(t, base, key, "POST", "/v1/sessions/"+p.ID+"/execute", map[string]any{"code": "kept = 7"}, &px); st != http.StatusOK || px.Status != "ok" {
		t.Fatalf("execute: %d %+v", st, px)
	}
	api(t, base, key, "PATCH", "/v1/sessions/"+p.ID, map[string]any{"lifetime_s": 0}, nil)
	testkit.Eventually(t, time.Minute, func() bool {
		var info struct {
			PausedAtTimeout bool `json:"paused_at_timeout"`
		}
		api(t, base, key, "GET", "/v1/sessions/"+p.ID, nil, &info)
		return info.PausedAtTimeout
	}, "the pod's session paused at its timeout")
	if st := api(t, base, key, "POST", "/v1/sessions/"+p.ID+"/execute", map[string]any{"code": "print(kept * 6)"}, &px); st != http.StatusOK || px.Stdout != "42\n" {
		t.Fatalf("its use resumes it: %d %+v", st, px)
	}

	if st := api(t, base, key, "POST", "/v1/sessions/"+s.ID+"/pause", nil, nil); st != http.StatusOK {
		t.Fatalf("pause: %d", st)
	}
	if st := api(t, base, key, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]any{"code": "echo paused"}, nil); st != http.StatusConflict {
		t.Fatalf("execute while paused: %d", st)
	}
	if st := api(t, base, key, "POST", "/v1/sessions/"+s.ID+"/resume", nil, nil); st != http.StatusOK {
		t.Fatalf("resume: %d", st)
	}
	if x := run(map[string]any{"code": "echo $n"}); x.Stdout != "41\n" {
		t.Fatalf("bash after the resume: %+v", x)
	}
}

// freeLoopbackAddr is a loopback address whose port was free a moment ago
// (for a listener a flag names, which cannot take port 0).
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// rawGet GETs path with the key and returns the body of a 200.
func rawGet(base, key, path string) (string, error) {
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b), err
}

// TestSnapshotsAcrossReplicasOnARealCluster: two replicas on the real
// cluster share a snapshot directory (as they would a volume they all
// mount): a session's variables and files, snapshotted through one,
// start a session through the other; a fork diverges from its source;
// a session hibernated (its pod deleted) wakes on its resume with its
// variables.
func TestSnapshotsAcrossReplicasOnARealCluster(t *testing.T) {
	_, namespace := k8stest.RealCluster(t)
	const key = "snapshots-test-key-0123456789"
	shared := t.TempDir()
	bases := make([]string, 2)
	for i := range bases {
		port := freeLoopbackPort(t)
		_, bases[i] = startBinary(t, "--runtime", "k8s", "--kubeconfig", k8stest.Kubeconfig(), "--k8s-namespace", namespace,
			"--instance", "gw-snap-"+strconv.Itoa(i), "--listen", "127.0.0.1:"+port, "--k8s-advertise-url", "http://127.0.0.1:"+port,
			"--api-key", key, "--log-level", "warn", "--state-dir", t.TempDir(), "--snapshot-dir", shared,
			"--k8s-seccomp-profile", "glassroom-kernel.json", "--cpus", "0.5", "--memory-mb", "512", "--k8s-cpu-request-ratio", "0.02")
	}
	a, b := bases[0], bases[1]
	exec := func(base, id, code string) execution {
		t.Helper()
		var x execution
		if st := api(t, base, key, "POST", "/v1/sessions/"+id+"/execute", map[string]any{"code": code}, &x); st != http.StatusOK || x.Status != "ok" {
			t.Fatalf("execute %q in %s: %d %+v", code, id, st, x)
		}
		return x
	}
	var s struct{ ID string }
	if st := api(t, a, key, "POST", "/v1/sessions", nil, &s); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	exec(a, s.ID, "x = 41\nopen('f.txt', 'w').write('kept')")
	var snap struct{ ID string }
	if st := api(t, a, key, "POST", "/v1/sessions/"+s.ID+"/snapshots", nil, &snap); st != http.StatusCreated || snap.ID == "" {
		t.Fatalf("snapshot: %d %+v", st, snap)
	}
	var r struct {
		ID      string
		Restore json.RawMessage
	}
	if st := api(t, b, key, "POST", "/v1/sessions", map[string]any{"snapshot": snap.ID}, &r); st != http.StatusCreated {
		t.Fatalf("a session from the snapshot through the other replica: %d", st)
	}
	var x execution
	if api(t, b, key, "POST", "/v1/sessions/"+r.ID+"/execute", map[string]any{"code": "print(x + 1, open('f.txt').read())"}, &x); x.Stdout != "42 kept\n" {
		t.Fatalf("the restored session: %+v (restore %s)", x, r.Restore)
	}
	var forks struct {
		Forks []struct{ Session *struct{ ID string } }
	}
	if st := api(t, a, key, "POST", "/v1/sessions/"+s.ID+"/fork", map[string]any{"count": 1}, &forks); st != http.StatusCreated || len(forks.Forks) != 1 || forks.Forks[0].Session == nil {
		t.Fatalf("fork: %d %+v", st, forks)
	}
	exec(a, forks.Forks[0].Session.ID, "x = 0")
	if x := exec(a, s.ID, "print(x)"); x.Stdout != "41\n" {
		t.Fatalf("the source after its fork changed: %+v", x)
	}
	var info struct{ State string }
	if st := api(t, a, key, "POST", "/v1/sessions/"+s.ID+"/pause", map[string]any{"keep_memory": false}, &info); st != http.StatusOK || info.State != "hibernated" {
		t.Fatalf("hibernate: %d %+v", st, info)
	}
	if st := api(t, a, key, "POST", "/v1/sessions/"+s.ID+"/resume", nil, nil); st != http.StatusOK {
		t.Fatalf("wake: %d", st)
	}
	if x := exec(a, s.ID, "print(x)"); x.Stdout != "41\n" {
		t.Fatalf("the woken session: %+v", x)
	}
}
