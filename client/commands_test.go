package client_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/client"
)

// TestCommands drives a session's shell commands through the Go client
// against a real gateway (local runtime): RunCommand's output and exit
// code and its timeout; a background command listed, fed stdin and
// waited for; another killed.
func TestCommands(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	c := g.Client(t, apptest.KeyA)
	ctx := ctxT(t, 3*time.Minute)
	s, err := c.CreateSession(ctx, client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.RunCommand(ctx, s.ID, "echo $A; echo oops >&2; exit 4", client.CommandOptions{Envs: map[string]string{"A": "a"}})
	if err != nil || out.Stdout != "a\n" || out.Stderr != "oops\n" || *out.ExitCode != 4 {
		t.Fatalf("RunCommand: %+v %v", out, err)
	}
	out, err = c.RunCommand(ctx, s.ID, "sleep 1000", client.CommandOptions{Timeout: time.Second})
	if err != nil || !out.TimedOut || *out.ExitCode != -1 {
		t.Fatalf("timeout: %+v %v", out, err)
	}
	h, err := c.StartCommand(ctx, s.ID, "read a; read b; echo $a-$b", client.CommandOptions{Stdin: "one\n"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.ListCommands(ctx, s.ID)
	if err != nil || len(list) != 3 || list[2].PID != h.PID || !list[2].Running {
		t.Fatalf("ListCommands: %+v %v", list, err)
	}
	if err := h.SendStdin(ctx, "two\n", true); err != nil {
		t.Fatal(err)
	}
	out, err = h.Wait(ctx)
	if err != nil || out.Stdout != "one-two\n" || *out.ExitCode != 0 {
		t.Fatalf("Wait: %+v %v", out, err)
	}
	if err := h.SendStdin(ctx, "late", false); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("stdin after the end: %v", err)
	}
	k, err := c.StartCommand(ctx, s.ID, "sleep 1000", client.CommandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	out, err = k.Wait(ctx)
	if err != nil || out.Running || *out.ExitCode == 0 {
		t.Fatalf("killed: %+v %v", out, err)
	}
	if _, err := c.Command(s.ID, 999).Output(ctx); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("pid 999: %v", err)
	}
	if !strings.Contains(out.Cmd, "sleep") {
		t.Fatalf("cmd %q", out.Cmd)
	}
	// A PTY: an interactive bash whose size changes while it runs.
	p, err := c.StartCommand(ctx, s.ID, "", client.CommandOptions{PTY: &api.TerminalSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Resize(ctx, 123, 40); err != nil {
		t.Fatal(err)
	}
	if err := p.SendStdin(ctx, "tput cols; exit\n", false); err != nil {
		t.Fatal(err)
	}
	out, err = p.Wait(ctx)
	if err != nil || !strings.Contains(out.Stdout, "123") || *out.ExitCode != 0 || !out.PTY {
		t.Fatalf("a PTY: %+v %v", out, err)
	}
	if err := p.Resize(ctx, 80, 24); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("resize after the end: %v", err)
	}
}
