package runtimetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// BashStarter starts a sandbox for spec (whose Kernel is "bash") and
// connects to it; the runtime's tests pass their own (an ID, a runtime).
type BashStarter func(t *testing.T, spec sandbox.Spec) Kernel

// Bash runs the bash kernel's suite on a runtime: what a cell sees and
// reports, streaming, interrupts, floods, rich output, cells that attack
// the kernel, and that neither workspace files nor the session's
// environment steer bash's start.
func Bash(t *testing.T, start BashStarter) {
	t.Run("Cells", func(t *testing.T) { bashCells(t, start(t, sandbox.Spec{Kernel: "bash"})) })
	t.Run("StartupFiles", func(t *testing.T) { bashStartupFiles(t, start(t, sandbox.Spec{Kernel: "bash"})) })
	t.Run("Environment", func(t *testing.T) {
		bashEnvironment(t, start(t, sandbox.Spec{Kernel: "bash", Env: map[string]string{
			"SHELLOPTS": "xtrace:errexit", "POSIXLY_CORRECT": "1", "PROMPT_COMMAND": "echo PLANTED-PC",
			"TMOUT": "1", "PS4": "PLANTED-PS4 ", "HISTFILE": "/home/user/hist", "PROBE_OK": "1",
		}}))
	})
}

// BashRun is one execution's events and reply.
type BashRun struct {
	Events []kernel.Event
	Reply  *kernel.ExecuteReply
}

// Stream returns the text of the stream events named name ("stdout" or
// "stderr"), joined.
func (r BashRun) Stream(name string) string {
	var b strings.Builder
	for _, ev := range r.Events {
		if ev.Kind == kernel.EventStream && ev.Name == name {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

// Errors returns the error events.
func (r BashRun) Errors() []kernel.Event {
	var out []kernel.Event
	for _, ev := range r.Events {
		if ev.Kind == kernel.EventError {
			out = append(out, ev)
		}
	}
	return out
}

// BashExec runs code and collects everything it sends. onEvent, if set,
// also sees each event as it arrives.
func BashExec(t testing.TB, k Kernel, code string, onEvent func(kernel.Event)) BashRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var r BashRun
	rep, err := k.Client.Execute(ctx, code, kernel.ExecuteOptions{}, func(ev kernel.Event) {
		r.Events = append(r.Events, ev)
		if onEvent != nil {
			onEvent(ev)
		}
	})
	if err != nil {
		t.Fatalf("execute %q: %v", code, err)
	}
	r.Reply = rep
	return r
}

// bashOK runs code, fails the test unless it succeeded, and returns its stdout.
func bashOK(t testing.TB, k Kernel, code string) string {
	t.Helper()
	r := BashExec(t, k, code, nil)
	if r.Reply.Status != "ok" {
		t.Fatalf("%q: %s %s: %s (stderr %q)", code, r.Reply.Status, r.Reply.EName, r.Reply.EValue, r.Stream("stderr"))
	}
	return r.Stream("stdout")
}

// bashInterrupted starts code, interrupts it once marker shows in its
// output, and returns the run.
func bashInterrupted(t *testing.T, k Kernel, code, marker string) BashRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	seen := make(chan struct{})
	var once sync.Once
	type result struct {
		r   BashRun
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r BashRun
		rep, err := k.Client.Execute(ctx, code, kernel.ExecuteOptions{}, func(ev kernel.Event) {
			r.Events = append(r.Events, ev)
			if ev.Kind == kernel.EventStream && strings.Contains(ev.Text, marker) {
				once.Do(func() { close(seen) })
			}
		})
		r.Reply = rep
		done <- result{r, err}
	}()
	select {
	case <-seen:
	case res := <-done:
		t.Fatalf("%q ended before the interrupt: %v %+v", code, res.err, res.r)
	}
	if err := k.Client.Interrupt(ctx); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("%q after the interrupt: %v", code, res.err)
	}
	return res.r
}

const dotPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// within returns a context that ends after d or with the test.
func within(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func bashCells(t *testing.T, k Kernel) {
	// kernel_info: the language, and no standard input.
	raw, err := k.Client.KernelInfo(within(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Implementation string `json:"implementation"`
		Banner         string `json:"banner"`
		Language       struct {
			Name, Mimetype, Version string
			Ext                     string `json:"file_extension"`
		} `json:"language_info"`
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	if info.Implementation != "glassroom-bash" || info.Language.Name != "bash" || info.Language.Mimetype != "text/x-sh" ||
		info.Language.Ext != ".sh" || !strings.HasPrefix(info.Language.Version, "5.") || !strings.Contains(info.Banner, "No standard input") {
		t.Errorf("kernel_info: %s", raw)
	}

	// State carries over: variables and the working directory.
	if out := bashOK(t, k, "x=41; echo $((x+1))"); out != "42\n" {
		t.Errorf("x=41; echo $((x+1)): %q", out)
	}
	bashOK(t, k, "mkdir -p sub && cd sub")
	if out := bashOK(t, k, "pwd; echo $x"); out != sandbox.WorkDir+"/sub\n41\n" {
		t.Errorf("cd or variable lost between cells: %q", out)
	}
	bashOK(t, k, "cd "+sandbox.WorkDir)

	// stdout and stderr are separate streams.
	r := BashExec(t, k, "echo out; echo err >&2", nil)
	if r.Stream("stdout") != "out\n" || r.Stream("stderr") != "err\n" {
		t.Errorf("streams: %+v", r.Events)
	}

	// Output is streamed while the cell runs, even while more keeps
	// coming: the cell prints dots until a file appears, which the test
	// creates only once it has seen the first line.
	if ws := k.Sandbox.Workspace(); ws != "" {
		goFile := filepath.Join(ws, "go-on")
		r = BashExec(t, k, "echo waiting; while [ ! -e go-on ]; do printf .; sleep 0.01; done; echo finished", func(ev kernel.Event) {
			if ev.Kind == kernel.EventStream && strings.Contains(ev.Text, "waiting") {
				if err := os.WriteFile(goFile, nil, 0o644); err != nil {
					t.Error(err)
				}
			}
		})
		if out := r.Stream("stdout"); r.Reply.Status != "ok" || !strings.HasPrefix(out, "waiting\n") || !strings.HasSuffix(out, "finished\n") {
			t.Errorf("streaming: %+v", r)
		}
	}

	// The exit status of the last command: an error when not zero, with
	// the status in the reply and an error on iopub.
	r = BashExec(t, k, "echo before; false", nil)
	if r.Reply.Status != "error" || r.Reply.EName != "ExitStatus" || r.Reply.EValue != "exit status 1" ||
		len(r.Errors()) != 1 || r.Errors()[0].EValue != "exit status 1" || r.Stream("stdout") != "before\n" {
		t.Errorf("false: %+v", r)
	}
	if out := bashOK(t, k, "echo $?"); out != "1\n" {
		t.Errorf("$? of the previous cell: %q", out)
	}
	for code, want := range map[string]int{"(exit 5)": 5, "true": 0, "false; true": 0} {
		msg, err := k.Client.Request(within(t, time.Minute), kernel.Shell, "execute_request", map[string]any{
			"code": code, "silent": false, "store_history": true, "user_expressions": map[string]string{}, "allow_stdin": false, "stop_on_error": false})
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Status   string `json:"status"`
			ExitCode *int   `json:"exit_code"`
		}
		if err := json.Unmarshal(msg.Content, &rep); err != nil || rep.ExitCode == nil || *rep.ExitCode != want || (rep.Status == "ok") != (want == 0) {
			t.Errorf("%s: reply %s", code, msg.Content)
		}
	}
	// A syntax error or an unterminated quote ends the cell, not the shell.
	for _, code := range []string{"echo 'unterminated", "if then fi", "echo \"open"} {
		r = BashExec(t, k, code, nil)
		if r.Reply.Status != "error" || r.Reply.EValue != "exit status 2" || !strings.Contains(r.Stream("stderr"), "line 1") {
			t.Errorf("%q: %+v", code, r)
		}
	}
	if out := bashOK(t, k, "echo $x"); out != "41\n" {
		t.Errorf("after syntax errors: %q", out)
	}

	// No standard input: commands read /dev/null.
	if out := bashOK(t, k, "cat; read line; echo \"read=$? line=$line\""); out != "read=1 line=\n" {
		t.Errorf("stdin: %q", out)
	}

	// An interrupt stops a busy loop and a sleep; the shell keeps its state.
	// The shell is kept when bash reacts within the kernel's grace (2 s) or
	// makes progress meanwhile; a starved sleep may do neither, and the
	// kernel then replaces bash, as it says on stderr: that case is tried
	// again (twice at most).
	for _, code := range []string{"echo looping; while true; do :; done", "echo sleeping; sleep 100; echo not-reached"} {
		for try := 1; ; try++ {
			r = bashInterrupted(t, k, code, "ing")
			if r.Reply.Status != "error" || r.Reply.EName != "KeyboardInterrupt" || strings.Contains(r.Stream("stdout"), "not-reached") {
				t.Errorf("interrupted %q: %+v", code, r)
			}
			out := bashOK(t, k, "echo $x; pwd")
			if out == "41\n"+sandbox.WorkDir+"\n" {
				break
			}
			if stderr := r.Stream("stderr"); try == 3 || !strings.Contains(stderr, "and was killed") {
				t.Errorf("state after interrupting %q: %q (the interrupted cell's stderr: %q)", code, out, stderr)
				break
			}
			t.Logf("try %d: bash did not stop within the grace and was replaced; again", try)
			bashOK(t, k, "x=41")
		}
	}
	// A cell that keeps working through the interrupt (its trap counts
	// them; the loop ends at the third) is interrupted again at each grace
	// while it uses CPU time, as one slowed by a busy machine is, and
	// keeps its shell: the kernel's later interrupts end it.
	r = bashInterrupted(t, k, `n=0 last=0
trap 'now=${EPOCHREALTIME/./}; if (( now - last > 200000 )); then n=$((n+1)) last=$now; fi' INT
echo working; while (( n < 3 )); do :; done; trap - INT; echo "obeyed $n"`, "working")
	if r.Reply.Status != "ok" || !strings.Contains(r.Stream("stdout"), "obeyed 3") || strings.Contains(r.Stream("stderr"), "new bash") {
		t.Errorf("a cell that obeys the third interrupt: %+v", r)
	}
	if out := bashOK(t, k, "echo $x"); out != "41\n" {
		t.Errorf("after a cell slow to obey: %q", out)
	}
	// A cell that ignores the interrupt and makes no progress loses its
	// shell, not the kernel, one grace after the interrupt.
	r = bashInterrupted(t, k, "trap '' INT; echo stubborn; sleep 1000", "stubborn")
	if r.Reply.Status != "error" || r.Reply.EName != "KeyboardInterrupt" || !strings.Contains(r.Stream("stderr"), "new bash") ||
		!strings.Contains(r.Stream("stderr"), "no progress") {
		t.Errorf("stubborn cell: %+v", r)
	}
	if out := bashOK(t, k, "echo \"x=$x\""); out != "x=\n" {
		t.Errorf("after the stubborn cell: %q", out)
	}
	bashOK(t, k, "x=41")

	// A 100 MB flood arrives in bounded messages and the kernel lives on.
	got, biggest := 0, 0
	rep, err := k.Client.Execute(within(t, 5*time.Minute), "yes | head -c 100000000", kernel.ExecuteOptions{}, func(ev kernel.Event) {
		if ev.Kind == kernel.EventStream {
			got += len(ev.Text)
			biggest = max(biggest, len(ev.Text))
			if ev.Name != "stdout" {
				t.Errorf("flood: a %s message", ev.Name)
			}
		}
	})
	if err != nil || rep.Status != "ok" || got == 0 || biggest > 64<<10 {
		t.Errorf("flood: %v, %d bytes, largest message %d", err, got, biggest)
	} else {
		t.Logf("flood: %d bytes received, largest message %d bytes, truncated %v", got, biggest, rep.Truncated)
	}
	// The kernel kept x. The flood's tail may still be draining from iopub
	// (the client stops reading it some time after the reply, and under
	// load the next cell's output can queue behind it): x is asked until
	// the backlog has drained, as the languages suite does after a flood.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		after := bashOK(t, k, "echo $x")
		if after == "41\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the flood: %q", after)
		}
	}

	// Rich output, in order with the text around it.
	r = BashExec(t, k, "echo "+dotPNG+" | base64 -d > dot.png; echo before; display dot.png; echo after; display --html '<b>x</b>'", nil)
	var kinds []string
	var png, html string
	for _, ev := range r.Events {
		switch ev.Kind {
		case kernel.EventStream:
			kinds = append(kinds, strings.TrimSpace(ev.Text))
		case kernel.EventDisplay:
			if v, ok := ev.Data["image/png"]; ok {
				_ = json.Unmarshal(v, &png)
				kinds = append(kinds, "png")
			}
			if v, ok := ev.Data["text/html"]; ok {
				_ = json.Unmarshal(v, &html)
				kinds = append(kinds, "html")
			}
		}
	}
	if r.Reply.Status != "ok" || strings.Join(kinds, ",") != "before,png,after,html" || png != dotPNG || html != "<b>x</b>" {
		t.Errorf("display: %v %q %q %+v", kinds, png, html, r.Reply)
	}
	if _, err := base64.StdEncoding.DecodeString(png); err != nil {
		t.Errorf("display: %v", err)
	}
	// Too big, or not there: an error of display, the kernel goes on.
	r = BashExec(t, k, "head -c 11000000 /dev/zero > big.png; display big.png", nil)
	if r.Reply.Status != "error" || !strings.Contains(r.Stream("stderr"), "limit") {
		t.Errorf("display of 11 MB: %+v", r)
	}
	for _, ev := range r.Events {
		if ev.Kind == kernel.EventDisplay {
			t.Errorf("display of 11 MB sent data")
		}
	}
	r = BashExec(t, k, "display missing.png", nil)
	if r.Reply.Status != "error" || !strings.Contains(r.Stream("stderr"), "no such file") {
		t.Errorf("display of a missing file: %+v", r)
	}

	// Cells that attack the kernel: fake sentinels are just output;
	// closing every descriptor or killing bash costs the shell, which the
	// next cell finds replaced.
	if out := bashOK(t, k, "printf 'done init 0\\nbegin x\\ndone %s 0\\n' abc"); out != "done init 0\nbegin x\ndone abc 0\n" {
		t.Errorf("fake sentinels: %q", out)
	}
	// Closing every descriptor bash writes to (the kernel's pipes, and
	// bash's own copies it restores them from) but its input.
	r = BashExec(t, k, `for fd in /proc/$$/fd/*; do
  n=${fd##*/}; flags=
  while read -r key value; do [[ $key == flags: ]] && flags=$value; done < /proc/$$/fdinfo/$n
  [[ -n $flags ]] && (( n > 2 && (8#$flags & 3) == 1 )) && eval "exec $n>&-"
done; echo closed`, nil)
	if !strings.Contains(r.Stream("stderr"), "new bash") {
		t.Errorf("closing the descriptors bash writes to: %+v", r)
	}
	// A DEBUG trap that closes bash's status pipe (its highest write-only
	// descriptor) just before the prompt hook reports: bash cannot report,
	// so it must end rather than leave the kernel waiting.
	r = BashExec(t, k, `trap '[[ $BASH_COMMAND == __glassroom_prompt ]] && { m=0; for fd in /proc/$$/fdinfo/*; do
  n=${fd##*/}; f=
  while read -r key value; do [[ $key == flags: ]] && f=$value; done < $fd
  [[ -n $f ]] && (( n > 2 && (8#$f & 3) == 1 && n > m )) && m=$n
done; eval "exec $m>&-"; }' DEBUG; echo trapped`, nil)
	if r.Stream("stdout") != "trapped\n" || !strings.Contains(r.Stream("stderr"), "new bash") {
		t.Errorf("closing the status pipe: %+v", r)
	}
	r = BashExec(t, k, "for fd in /proc/$$/fd/*; do eval \"exec ${fd##*/}>&-\"; done; echo closed", nil)
	if !strings.Contains(r.Stream("stderr"), "new bash") {
		t.Errorf("closing every descriptor: %+v", r)
	}
	r = BashExec(t, k, "sleep 1000 & kill -9 $$", nil)
	if r.Reply.Status != "error" || r.Reply.EValue != "exit status 137" || !strings.Contains(r.Stream("stderr"), "new bash") {
		t.Errorf("kill -9 $$: %+v", r)
	}
	r = BashExec(t, k, "exec bash -c 'echo replaced; exit 4'", nil)
	if r.Reply.EValue != "exit status 4" || r.Stream("stdout") != "replaced\n" {
		t.Errorf("exec: %+v", r)
	}
	for _, code := range []string{"PROMPT_COMMAND=x", "__glassroom_prompt() { :; }", "unset -f __glassroom_prompt"} {
		if r = BashExec(t, k, code, nil); r.Reply.Status != "error" || !strings.Contains(r.Stream("stderr"), "readonly") {
			t.Errorf("%q: %+v", code, r)
		}
	}
	bashOK(t, k, "alias trap=false builtin=false .=false __glassroom_begin=false printf=false")
	if out := bashOK(t, k, "echo still"); out != "still\n" {
		t.Errorf("after aliases over the kernel's words: %q", out)
	}

	// The kernel's private directory removed, or made unwritable: the cell
	// after gets an answer (and a new bash when needed), the next one runs.
	bashOK(t, k, `rm -rf "$__glassroom_dir"`)
	if out := bashOK(t, k, "echo after-rm"); out != "after-rm\n" {
		t.Errorf("after removing the private directory: %q", out)
	}
	bashOK(t, k, `chmod 000 "$__glassroom_dir"`)
	r = BashExec(t, k, "echo blocked", nil)
	if r.Reply.Status != "error" || r.Reply.EName != "BashError" || !strings.Contains(r.Reply.EValue, "new bash") {
		t.Errorf("unwritable private directory: %+v", r)
	}
	if out := bashOK(t, k, "echo unblocked"); out != "unblocked\n" {
		t.Errorf("after an unwritable private directory: %q", out)
	}

	// exit: reported, and the next cell runs in a fresh bash.
	bashOK(t, k, "x=41; cd sub")
	r = BashExec(t, k, "exit 3", nil)
	if r.Reply.Status != "error" || r.Reply.EValue != "exit status 3" || !strings.Contains(r.Stream("stderr"), "variables") {
		t.Errorf("exit 3: %+v", r)
	}
	if out := bashOK(t, k, "echo \"x=$x\"; pwd"); out != "x=\n"+sandbox.WorkDir+"\n" {
		t.Errorf("after exit: %q", out)
	}

	// Completion from the live shell; inspection is not offered.
	bashOK(t, k, "glassroom_probe_var=1")
	for code, want := range map[string]string{"ech": "echo", "echo $glassroom_pro": "$glassroom_probe_var", "ls su": "sub/"} {
		raw, err := k.Client.Complete(within(t, time.Minute), code, len(code))
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Matches []string `json:"matches"`
			Status  string   `json:"status"`
		}
		if err := json.Unmarshal(raw, &c); err != nil || c.Status != "ok" || !contains(c.Matches, want) {
			t.Errorf("complete %q: %s", code, raw)
		}
	}
	raw, err = k.Client.Inspect(within(t, time.Minute), "ls", 2, 0)
	var insp struct {
		Status string `json:"status"`
		Found  *bool  `json:"found"`
	}
	if err != nil || json.Unmarshal(raw, &insp) != nil || insp.Status != "ok" || insp.Found == nil || *insp.Found {
		t.Errorf("inspect: %s %v", raw, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// bashStartupFiles plants every start-up file bash could read in the
// workspace (HOME), then checks that none ran in a fresh bash (after
// exit) nor in a restarted kernel.
func bashStartupFiles(t *testing.T, k Kernel) {
	bashOK(t, k, `for f in .bashrc .bash_profile .bash_login .profile .bash_logout .inputrc .bash_history env.sh; do
  printf 'planted=%s; touch "$HOME/ran%s"\n' "$f" "$f" > "$HOME/$f"
done
echo 'set editing-mode vi' >> .inputrc`)
	check := func(when string) {
		t.Helper()
		if out := bashOK(t, k, `echo "planted=${planted-none}"; ls -a | grep '^ran' || true`); out != "planted=none\n" {
			t.Errorf("%s: a start-up file ran: %q", when, out)
		}
	}
	check("first bash")
	BashExec(t, k, "exit", nil)
	check("after exit")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	k.Reconnect(t)
	check("after restart")
}

// bashEnvironment: the session's variables reach the code, but not those
// that steer bash itself.
func bashEnvironment(t *testing.T, k Kernel) {
	out := bashOK(t, k, `echo "probe=$PROBE_OK tmout=${TMOUT-unset} pc=$PROMPT_COMMAND hist=${HISTFILE-unset}"; [[ -o xtrace || -o errexit || -o posix ]] && echo steered; false; echo survived`)
	if out != "probe=1 tmout=unset pc=__glassroom_prompt hist=unset\nsurvived\n" {
		t.Errorf("environment: %q", out)
	}
	r := BashExec(t, k, "set -x; echo traced; set +x", nil)
	if strings.Contains(r.Stream("stderr"), "PLANTED") {
		t.Errorf("PS4 from the session: %q", r.Stream("stderr"))
	}
}
