package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultsHost is a host of its own for gateways that run with the default
// state directories: as root, a mount namespace whose /run is a fresh
// tmpfs (so /run/glassroom/... are the real defaults, yet nobody else's);
// otherwise a TMPDIR of the test's. Commands run in it through wrap; the
// test sees a path p of it at view(p).
type defaultsHost struct {
	wrap []string // prefix of the command line
	env  []string
	root string // where the test sees the host's "/" (root) or its TMPDIR
}

func newDefaultsHost(t *testing.T) *defaultsHost {
	t.Helper()
	if os.Geteuid() != 0 {
		dir := stateDir(t)
		return &defaultsHost{env: []string{"TMPDIR=" + dir}, root: dir}
	}
	holder := exec.Command("unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", "mount -t tmpfs -o mode=0755 glassroom-test /run && echo ready && exec cat")
	stdin, _ := holder.StdinPipe()
	stdout, _ := holder.StdoutPipe()
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	t.Cleanup(func() { stdin.Close(); holder.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the mount namespace did not come up: %q %v", line, err)
	}
	pid := strconv.Itoa(holder.Process.Pid)
	return &defaultsHost{wrap: []string{"nsenter", "--mount=/proc/" + pid + "/ns/mnt", "--"}, root: "/proc/" + pid + "/root"}
}

// command is the gateway binary with args, run in the host.
func (h *defaultsHost) command(t *testing.T, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, h.wrap...), gatewayBinary(t)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), h.env...)
	return cmd
}

// view is where the test sees the host's path p.
func (h *defaultsHost) view(p string) string {
	if len(h.wrap) == 0 {
		return p // TMPDIR-based defaults are the test's own paths
	}
	return filepath.Join(h.root, p)
}

// defaultLocalStateDir is the local runtime's default state directory in
// the host.
func (h *defaultsHost) defaultLocalStateDir() string {
	if len(h.wrap) == 0 {
		return filepath.Join(h.root, "glassroom-local-"+strconv.Itoa(os.Geteuid()))
	}
	return "/run/glassroom/local"
}

// TestTwoGatewaysOnOneHost: `glassroom serve` with the default state
// directory holds a live session; a second serve on the same directory
// refuses to start, naming the directory and the flag that picks another;
// `glassroom mcp --embedded` runs in a directory of its own and serves
// code; the first gateway's session directory is untouched and its
// session still runs code, with its variables and files.
func TestTwoGatewaysOnOneHost(t *testing.T) {
	h := newDefaultsHost(t)
	const key = "two-gateways-key-0123456789"
	serve := func() *exec.Cmd {
		return h.command(t, "serve", "--listen", "127.0.0.1:0", "--api-key", key, "--log-level", "info")
	}
	base := startCommand(t, serve())
	exec := func(id, code string) execution {
		t.Helper()
		var x execution
		if st := api(t, base, key, "POST", "/v1/sessions/"+id+"/execute", map[string]any{"code": code, "timeout_s": 60}, &x); st != http.StatusOK {
			t.Fatalf("execute: %d", st)
		}
		return x
	}
	var s struct{ ID string }
	if st := api(t, base, key, "POST", "/v1/sessions", nil, &s); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	exec(s.ID, "x = 41\nopen('kept.txt', 'w').write('file')")
	stateDir := h.defaultLocalStateDir()
	sessionDir := h.view(filepath.Join(stateDir, s.ID))
	if _, err := os.Stat(sessionDir); err != nil {
		t.Fatalf("the session's directory is not in the default state dir %s: %v", stateDir, err)
	}

	// A second serve, same defaults: it must refuse, before it touches anything.
	second := serve()
	var errOut syncBuffer
	second.Stderr = &errOut
	out, _ := second.StdoutPipe()
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if urlRe.MatchString(sc.Text()) {
			t.Errorf("a second gateway started on the state dir %s of a live one", stateDir)
			second.Process.Kill()
			break
		}
	}
	go io.Copy(io.Discard, out)
	err := second.Wait()
	msg := errOut.String()
	t.Logf("the second gateway: %v: %s", err, msg)
	if err == nil || !strings.Contains(msg, stateDir) || !strings.Contains(msg, "in use") || !strings.Contains(msg, "--state-dir") {
		t.Errorf("the second gateway should have refused to start, naming %s and --state-dir: %v\n%s", stateDir, err, msg)
	}
	if strings.Contains(msg, "orphan") {
		t.Errorf("the second gateway reconciled the live one's state dir:\n%s", msg)
	}

	// An embedded MCP gateway, defaults again: a directory of its own.
	mcpCmd := h.command(t, "mcp", "--embedded", "--log-level", "info")
	var mcpLog syncBuffer
	mcpCmd.Stderr = &mcpLog
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "two-gateways-test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: mcpCmd}, nil)
	if err != nil {
		t.Fatalf("mcp --embedded: %v\n%s", err, mcpLog.String())
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "print(6 * 7)"}})
	if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "42") {
		t.Errorf("execute_python in the embedded gateway: %v %+v\n%s", err, res, mcpLog.String())
	}
	m := regexp.MustCompile(`"state_dir":"([^"]+)"`).FindStringSubmatch(mcpLog.String())
	if m == nil || m[1] == stateDir || !strings.HasPrefix(m[1], stateDir+"-mcp-") {
		t.Errorf("the embedded gateway's state dir should be its own (%s-mcp-<n>): %v\n%s", stateDir, m, mcpLog.String())
	}
	if m != nil {
		t.Logf("the embedded gateway's state dir: %s", m[1])
	}
	if err := cs.Close(); err != nil {
		t.Errorf("mcp --embedded ended with %v\n%s", err, mcpLog.String())
	}
	if strings.Contains(mcpLog.String(), s.ID) {
		t.Errorf("the embedded gateway touched the serve gateway's session %s:\n%s", s.ID, mcpLog.String())
	}

	// The first gateway's session is whole.
	if _, err := os.Stat(filepath.Join(sessionDir, "work", "kept.txt")); err != nil {
		t.Errorf("the live session's directory was removed: %v", err)
	}
	if x := exec(s.ID, "x + 1"); x.Result.Text != "42" {
		t.Errorf("the live session lost its variables: %+v", x)
	}
	if x := exec(s.ID, "print(open('kept.txt').read())"); strings.TrimSpace(x.Stdout) != "file" {
		t.Errorf("the live session lost its files: %+v", x)
	}
}

// TestTwoGatewaysOnOneUIDRange (the case: two gateways on one host
// with one --uid-base shared a host uid, so one RLIMIT_NPROC budget): as
// root, a `glassroom serve` holds uids 201024-202047; a second serve with
// a state directory of its own and the same --uid-base refuses to start,
// naming the holder and --uid-base with a free base; `glassroom mcp
// --embedded` with the defaults passes over slot 0 (whose uids those are)
// and serves code in slot 1; with that --uid-base after "--" it refuses,
// saying where the flag goes.
func TestTwoGatewaysOnOneUIDRange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("per-sandbox uids need root (otherwise the local runtime's sandboxes run as the gateway's uid and no range is claimed)")
	}
	h := newDefaultsHost(t)
	const key = "two-uid-ranges-key-0123456789"
	serve := func(stateDir string) *exec.Cmd {
		return h.command(t, "serve", "--listen", "127.0.0.1:0", "--api-key", key, "--log-level", "info",
			"--state-dir", stateDir, "--uid-base", "201024")
	}
	startCommand(t, serve("/run/glassroom/first"))
	refused := func(cmd *exec.Cmd) string {
		t.Helper()
		timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
		defer timer.Stop()
		out, err := cmd.CombinedOutput()
		if err == nil || urlRe.Match(out) {
			t.Fatalf("a second gateway on uids 201024-202047 started: %v\n%s", err, out)
		}
		return string(out)
	}
	msg := refused(serve("/run/glassroom/second"))
	t.Logf("the second gateway: %s", msg)
	for _, want := range []string{"uids 201024-202047", "--uid-base 202048", "state dir /run/glassroom/first"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "orphan") {
		t.Errorf("the refused gateway reconciled its state dir:\n%s", msg)
	}

	// The embedded MCP gateway's slot 0 has those uids: it takes slot 1.
	mcpCmd := h.command(t, "mcp", "--embedded", "--log-level", "info")
	var mcpLog syncBuffer
	mcpCmd.Stderr = &mcpLog
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "two-uid-ranges-test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: mcpCmd}, nil)
	if err != nil {
		t.Fatalf("mcp --embedded: %v\n%s", err, mcpLog.String())
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "print(6 * 7)"}})
	if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "42") {
		t.Errorf("execute_python in the embedded gateway: %v %+v\n%s", err, res, mcpLog.String())
	}
	if m := regexp.MustCompile(`"state_dir":"([^"]+)"`).FindStringSubmatch(mcpLog.String()); m == nil || m[1] != "/run/glassroom/local-mcp-1" {
		t.Errorf("the embedded gateway should have passed over slot 0 (its uids are claimed) to /run/glassroom/local-mcp-1: %v\n%s", m, mcpLog.String())
	}
	if err := cs.Close(); err != nil {
		t.Errorf("mcp --embedded ended with %v\n%s", err, mcpLog.String())
	}

	// With --uid-base on claimed uids it refuses, naming the flag after "--".
	msg = refused(h.command(t, "mcp", "--embedded", "--log-level", "info", "--", "--uid-base", "201500"))
	if !strings.Contains(msg, "--uid-base 202048") || !strings.Contains(msg, `glassroom mcp --embedded -- --uid-base N`) {
		t.Errorf("the embedded gateway's refusal does not name --uid-base after \"--\":\n%s", msg)
	}
}
