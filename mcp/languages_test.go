package mcp_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/kernel/kernels"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLanguages drives execute_code, list_languages and restart_session's
// language with the go-sdk's client against a real gateway on each
// runtime, over streamable HTTP at /mcp and over stdio: every installed
// language runs in a session of its own (its first kernel) and beside
// Python in one session, each with its own variables.
func TestLanguages(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			ctx := ctxT(t, 5*time.Minute)
			t.Run("streamable http", func(t *testing.T) {
				languagesFlow(t, g, connect(t, ctx, httpTransport(g.URL, apptest.KeyA)))
			})
			t.Run("stdio", func(t *testing.T) {
				cmd := exec.Command(binary, "mcp", "--url", g.URL, "--api-key", apptest.KeyA, "--log-level", "warn")
				cmd.Stderr = os.Stderr
				languagesFlow(t, g, connect(t, ctx, &sdk.CommandTransport{Command: cmd}))
			})
		})
	}
}

func languagesFlow(t *testing.T, g *apptest.Gateway, cs *sdk.ClientSession) {
	ctx := ctxT(t, 4*time.Minute)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var exec *sdk.Tool
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		if tool.Name == "execute_code" {
			exec = tool
		}
	}
	if exec == nil || !names["list_languages"] || !names["execute_python"] {
		t.Fatalf("tools %v", names)
	}
	schema, _ := exec.InputSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	for _, p := range []string{"code", "language", "context", "session_id", "timeout_s", "envs", "cwd"} {
		if d, _ := props[p].(map[string]any); d == nil || d["description"] == "" {
			t.Fatalf("execute_code's %s is not described: %+v", p, props)
		}
	}
	for _, k := range kernels.All() { // the registry's languages, each named
		if !strings.Contains(exec.Description, k.DisplayName) {
			t.Fatalf("execute_code's description lacks %s: %q", k.DisplayName, exec.Description)
		}
	}

	langs := textOf(call(t, ctx, cs, "list_languages", map[string]any{}))
	for _, k := range g.Manager.InstalledKernels() {
		if !strings.Contains(langs, "\n"+k.Name+": ") {
			t.Fatalf("list_languages does not list %s: %q", k.Name, langs)
		}
	}

	first := call(t, ctx, cs, "execute_code", map[string]any{"code": "x = 41\nprint('py')", "language": "python"})
	out, _ := first.StructuredContent.(map[string]any)
	sid, _ := out["session_id"].(string)
	if first.IsError || sid == "" || out["session_created"] != true || out["language"] != "python" || !strings.Contains(textOf(first), "stdout:\npy") {
		t.Fatalf("first execute_code: %q %+v", textOf(first), first.StructuredContent)
	}
	defer call(t, ctx, cs, "close_session", map[string]any{"session_id": sid})
	if r := call(t, ctx, cs, "execute_code", map[string]any{"code": "x + 1", "session_id": sid}); r.IsError || !strings.Contains(textOf(r), "42") {
		t.Fatalf("execute_code without a language runs Python: %q", textOf(r))
	}
	// envs and cwd apply to one call only.
	if r := call(t, ctx, cs, "execute_code", map[string]any{"code": "mkdir -p d && echo made", "language": "bash", "session_id": sid}); r.IsError {
		t.Fatalf("mkdir: %q", textOf(r))
	}
	show := "echo \"[${ONCE-unset}] $PWD\""
	if r := call(t, ctx, cs, "execute_code", map[string]any{"code": show, "language": "bash", "session_id": sid,
		"envs": map[string]any{"ONCE": "$(x) 'y'"}, "cwd": "d"}); r.IsError || !strings.Contains(textOf(r), "[$(x) 'y'] /home/user/d") {
		t.Fatalf("execute_code with envs and cwd: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "execute_code", map[string]any{"code": show, "language": "bash", "session_id": sid}); r.IsError || !strings.Contains(textOf(r), "[unset] /home/user\n") {
		t.Fatalf("execute_code after envs and cwd: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "execute_code", map[string]any{"code": show, "language": "bash", "session_id": sid,
		"envs": map[string]any{"LD_PRELOAD": "x"}}); !r.IsError || !strings.Contains(textOf(r), "LD_PRELOAD") {
		t.Fatalf("execute_code with a reserved name: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "execute_code", map[string]any{"code": "x", "session_id": sid, "context": "default"}); r.IsError || !strings.Contains(textOf(r), "41") {
		t.Fatalf("execute_code in the first context: %q", textOf(r))
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"code": "1", "session_id": sid, "language": "cobol"}, `unknown language "cobol"`},
		{map[string]any{"code": "1", "session_id": sid, "context": "python3-00000000"}, "no such context"},
		{map[string]any{"code": "1", "language": "cobol"}, `unknown language "cobol"`},
	} {
		if r := call(t, ctx, cs, "execute_code", c.args); !r.IsError || !strings.Contains(textOf(r), c.want) {
			t.Errorf("execute_code %v: %q, want %q", c.args, textOf(r), c.want)
		}
	}
	if r := call(t, ctx, cs, "restart_session", map[string]any{"session_id": sid, "language": "cobol"}); !r.IsError {
		t.Errorf("restart of cobol: %q", textOf(r))
	}

	for _, lang := range apptest.Languages() {
		t.Run(lang, func(t *testing.T) {
			g.NeedKernel(t, lang)
			// Beside Python in the same session: its own kernel, same files.
			r := call(t, ctx, cs, "execute_code", map[string]any{"code": apptest.Print42(lang), "language": lang, "session_id": sid})
			if r.IsError || !strings.Contains(textOf(r), "stdout:\n42\n") {
				t.Fatalf("%s beside Python: %q", lang, textOf(r))
			}
			// A session of its own: its first kernel is that language.
			own := call(t, ctx, cs, "execute_code", map[string]any{"code": apptest.Print42(lang), "language": lang})
			osid, _ := own.StructuredContent.(map[string]any)["session_id"].(string)
			if own.IsError || osid == "" || !strings.Contains(textOf(own), "stdout:\n42\n") {
				t.Fatalf("%s in a new session: %q", lang, textOf(own))
			}
			defer call(t, ctx, cs, "close_session", map[string]any{"session_id": osid})
			s, err := g.Client(t, apptest.KeyA).GetSession(ctx, osid)
			if err != nil || s.Language != lang {
				t.Fatalf("the %s session: %+v %v", lang, s, err)
			}
			// execute_python in it runs Python, not the first kernel's language.
			if r := call(t, ctx, cs, "execute_python", map[string]any{"code": "print(6 * 7)", "session_id": osid}); r.IsError || !strings.Contains(textOf(r), "stdout:\n42\n") {
				t.Fatalf("execute_python in a %s session: %q", lang, textOf(r))
			}
		})
	}

	// restart_session with a language restarts that language's kernels only.
	call(t, ctx, cs, "execute_code", map[string]any{"code": "y = 1", "session_id": sid})
	for _, k := range g.Manager.InstalledKernels() {
		if k.Name == "python3" {
			continue
		}
		if r := call(t, ctx, cs, "restart_session", map[string]any{"session_id": sid, "language": k.Name}); r.IsError || !strings.Contains(textOf(r), k.Name) {
			t.Fatalf("restart %s: %q", k.Name, textOf(r))
		}
		if r := call(t, ctx, cs, "execute_code", map[string]any{"code": "y", "session_id": sid}); r.IsError {
			t.Fatalf("python's y after a %s restart: %q", k.Name, textOf(r))
		}
	}
	if r := call(t, ctx, cs, "restart_session", map[string]any{"session_id": sid, "language": "py"}); r.IsError || !strings.Contains(textOf(r), "python3") {
		t.Fatalf("restart python: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "execute_code", map[string]any{"code": "y", "session_id": sid}); !r.IsError || !strings.Contains(textOf(r), "NameError") {
		t.Fatalf("y after python's restart: %q", textOf(r))
	}
}
