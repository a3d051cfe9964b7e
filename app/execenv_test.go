package app_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
)

// subView is a Python program, run as a subprocess of the kernel, that
// prints what a process the code starts sees: "S", then GR_X, GR_Y (hex
// after "h", or "-" when unset) and its working directory.
const subView = `import os
h = lambda k: "h" + os.environ[k].encode().hex() if k in os.environ else "-"
print("S", h("GR_X"), h("GR_Y"), "h" + os.getcwd().encode().hex())`

// envView is code, per language, that prints the kernel's own view ("K",
// as subView) and then runs subView as a subprocess.
var envView = map[string]string{
	"python3": "import os as _os, subprocess as _sp\n" +
		"_h = lambda k: 'h' + _os.environ[k].encode().hex() if k in _os.environ else '-'\n" +
		"print('K', _h('GR_X'), _h('GR_Y'), 'h' + _os.getcwd().encode().hex())\n" +
		"print(_sp.run(['/usr/bin/python3', '-c', " + pyLit(subView) + "], capture_output=True, text=True).stdout, end='')",
	"r": "local({\n" +
		"  hx <- function(v) paste0('h', paste(as.character(charToRaw(v)), collapse = ''))\n" +
		"  h <- function(k) { v <- Sys.getenv(k, unset = NA); if (is.na(v)) '-' else hx(v) }\n" +
		"  cat('K', h('GR_X'), h('GR_Y'), hx(getwd()), '\\n')\n" +
		"  cat(system2('/usr/bin/python3', c('-c', shQuote(" + pyLit(subView) + ")), stdout = TRUE), sep = '\\n')\n" +
		"  cat('\\n')\n" +
		"})",
	"javascript": denoView,
	"typescript": denoView,
	"java":       javaView,
	"bash": "__h() { if [[ -v $1 ]]; then printf 'h%s' \"$(printf %s \"${!1}\" | od -An -tx1 | tr -d ' \\n')\"; else printf -- -; fi; }\n" +
		"echo \"K $(__h GR_X) $(__h GR_Y) h$(printf %s \"$PWD\" | od -An -tx1 | tr -d ' \\n')\"\n" +
		"/usr/bin/python3 -c " + shLit(subView),
}

// javaView is envView in Java: a JVM's envs are its system properties
// (kernels.Settings.PropertiesOnly), its directory user.dir.
var javaView = `{
  java.util.function.Function<String, String> hx = v -> { StringBuilder b = new StringBuilder("h");
    for (byte c : v.getBytes(java.nio.charset.StandardCharsets.UTF_8)) b.append(String.format("%02x", c)); return b.toString(); };
  java.util.function.Function<String, String> h = k -> System.getProperty(k) == null ? "-" : hx.apply(System.getProperty(k));
  System.out.println("K " + h.apply("GR_X") + " " + h.apply("GR_Y") + " " + hx.apply(System.getProperty("user.dir")));
  Process p = new ProcessBuilder("/usr/bin/python3", "-c", ` + jsonLit(subView) + `).redirectErrorStream(true).start();
  System.out.print(new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
  p.waitFor();
}`

const denoView = `{
  const hx = (v) => "h" + Array.from(new TextEncoder().encode(v), (b) => b.toString(16).padStart(2, "0")).join("");
  const h = (k) => { const v = Deno.env.get(k); return v === undefined ? "-" : hx(v); };
  console.log("K", h("GR_X"), h("GR_Y"), hx(Deno.cwd()));
  const o = new Deno.Command("/usr/bin/python3", { args: ["-c", ` + "`" + subView + "`" + `] }).outputSync();
  console.log(new TextDecoder().decode(o.stdout).trim());
}`

// jsonLit is s as a JSON string: a Java string literal too.
func jsonLit(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func pyLit(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}

func shLit(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// view is what one side (K: the kernel, S: a subprocess) saw.
type view struct{ x, y, cwd string }

const unset = "<unset>"

// parseViews reads the K and S lines of envView's output.
func parseViews(t *testing.T, out string) (k, s view) {
	t.Helper()
	dec := func(f string) string {
		if f == "-" {
			return unset
		}
		b, err := hex.DecodeString(strings.TrimPrefix(f, "h"))
		if err != nil {
			t.Fatalf("bad hex %q in %q", f, out)
		}
		return string(b)
	}
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || (f[0] != "K" && f[0] != "S") {
			continue
		}
		v := view{dec(f[1]), dec(f[2]), dec(f[3])}
		if f[0] == "K" {
			k = v
		} else {
			s = v
		}
		seen++
	}
	if seen != 2 {
		t.Fatalf("want a K and an S line in %q", out)
	}
	return k, s
}

// hostile is a value no quoting may get wrong.
const hostile = "a'b\"c\n$(echo pwned) `id` \\ ${HOME} $HOME %s %%\t\x01 é 日本 \u2028 <&> ;|& \\' end"

// TestExecutionEnvs checks an execution's envs and cwd on every kernel of
// both runtimes: the code and a process it starts see them (the values
// really in the process's environment, hostile ones intact), the next
// execution does not (a session variable overridden is back, a new one
// gone, the directory the previous one), also after an error, a timeout's
// interrupt, a client's interrupt, and an apply that fails (a missing
// directory, a clear error); reserved names are refused with a 400.
func TestExecutionEnvs(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			var s api.Session
			if st := g.Call(t, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{Env: map[string]string{"GR_Y": "from the session"}}, &s); st != http.StatusCreated {
				t.Fatalf("create: %d", st)
			}
			sid := s.ID
			dir := "envs/it's a \"dir\" $(x) é"
			if e := run(t, g, sid, api.ExecuteRequest{Code: api.Ptr("import os; os.makedirs(" + pyLit("/home/user/"+dir) + ", exist_ok=True)")}); e.Status != "ok" {
				t.Fatalf("mkdir: %+v", e)
			}
			for _, lang := range runtimetest.Languages() {
				t.Run(lang.Kernel, func(t *testing.T) {
					g.NeedKernel(t, lang.Kernel)
					def, _ := kernels.Lookup(lang.Kernel)
					in := func(code string) api.ExecuteRequest {
						return api.ExecuteRequest{Code: api.Ptr(code), Language: lang.Kernel, TimeoutS: api.Ptr(120.0)}
					}
					// A JVM keeps its directory (FixedCwd): its settings are
					// envs only.
					settings := func(code string) api.ExecuteRequest {
						r := in(code)
						r.Envs = map[string]string{"GR_X": hostile, "GR_Y": "overridden"}
						if !def.Settings.FixedCwd {
							r.Cwd = dir
						}
						return r
					}
					// Nothing of the settings is left: the session's GR_Y, no
					// GR_X, the workspace.
					clean := func(t *testing.T, after string) api.Execution {
						t.Helper()
						e := run(t, g, sid, in(envView[lang.Kernel]))
						k, sub := parseViews(t, text(e))
						want := view{unset, "from the session", sandbox.WorkDir}
						if k != want || sub != want {
							t.Fatalf("after %s: the kernel sees %+v, a subprocess %+v; want %+v", after, k, sub, want)
						}
						return e
					}
					before := clean(t, "nothing")

					e := run(t, g, sid, settings(envView[lang.Kernel]))
					if e.Status != "ok" {
						t.Fatalf("with settings: %s %+v %s", e.Status, e.Error, text(e))
					}
					// The settings' own executions are not counted: the
					// execution counts are the kernel's, one per cell.
					if e.ExecutionCount != before.ExecutionCount+1 {
						t.Fatalf("execution count with settings %d, the one before %d", e.ExecutionCount, before.ExecutionCount)
					}
					k, sub := parseViews(t, text(e))
					want := view{hostile, "overridden", sandbox.WorkDir + "/" + dir}
					if def.Settings.FixedCwd {
						want.cwd = sandbox.WorkDir
					}
					wantSub := want
					if def.Settings.PropertiesOnly { // a subprocess has the session's environment
						wantSub = view{unset, "from the session", want.cwd}
					}
					if k != want || sub != wantSub {
						t.Fatalf("with settings: the kernel sees %+v, a subprocess %+v; want %+v and %+v", k, sub, want, wantSub)
					}
					if after := clean(t, "an execution with settings"); after.ExecutionCount != e.ExecutionCount+1 {
						t.Fatalf("execution count after settings %d, with them %d", after.ExecutionCount, e.ExecutionCount)
					}

					if e := run(t, g, sid, settings(lang.Error)); e.Status != "error" {
						t.Fatalf("an error with settings: %s", e.Status)
					}
					clean(t, "an error")

					busy := settings(lang.Busy)
					busy.TimeoutS = api.Ptr(3.0)
					if e := run(t, g, sid, busy); e.Status != "timeout" || e.StateLost {
						t.Fatalf("a busy loop past its timeout: %s state_lost=%v %s", e.Status, e.StateLost, e.Reason)
					}
					clean(t, "a timeout")

					// A client's interrupt, once the loop runs.
					done := make(chan api.Execution, 1)
					go func() {
						var e api.Execution
						g.Call(t, bearer, "POST", "/v1/sessions/"+sid+"/execute", settings(lang.Busy), &e)
						done <- e
					}()
					testkit.Eventually(t, time.Minute, func() bool {
						var list struct{ Contexts []api.Context }
						g.Call(t, bearer, "GET", "/v1/sessions/"+sid+"/contexts", nil, &list)
						for _, c := range list.Contexts {
							if c.Language == lang.Kernel && c.Default {
								return c.State == "busy"
							}
						}
						return false
					}, "the busy loop runs")
					// Sent again only when one was lost (it reached the kernel
					// before the loop began): a stray interrupt would stop the
					// next cell (suspected in one unexplained failure on R under load).
					testkit.Eventually(t, 2*time.Minute, func() bool {
						g.Call(t, bearer, "POST", "/v1/sessions/"+sid+"/interrupt", nil, nil)
						select {
						case e := <-done:
							if e.Status != "interrupted" || e.StateLost {
								t.Fatalf("an interrupted loop: %s state_lost=%v %s", e.Status, e.StateLost, e.Reason)
							}
							return true
						case <-time.After(20 * time.Second):
							return false
						}
					}, "the interrupt ends the loop")
					clean(t, "an interrupt")

					if def.Settings.FixedCwd { // any cwd: a 400 that says why
						r := settings(envView[lang.Kernel])
						r.Cwd = dir
						var ae struct {
							Error struct{ Code, Message string }
						}
						if st := g.Call(t, bearer, "POST", "/v1/sessions/"+sid+"/execute", r, &ae); st != http.StatusBadRequest ||
							!strings.Contains(ae.Error.Message, "keeps the working directory it started in") {
							t.Fatalf("a cwd for a kernel that cannot change it: %d %+v", st, ae)
						}
						clean(t, "a refused cwd")
					} else {
						// A directory that is not there: a clear error, nothing applied.
						missing := settings(envView[lang.Kernel])
						missing.Cwd = "no/such/dir"
						e = run(t, g, sid, missing)
						if e.Status != "error" || e.Error == nil || !strings.Contains(e.Error.Value, "cwd "+sandbox.WorkDir+"/no/such/dir: no such directory") {
							t.Fatalf("a missing cwd: %s %+v", e.Status, e.Error)
						}
						if strings.Contains(text(e), "K ") {
							t.Fatalf("the code ran despite a missing cwd: %q", text(e))
						}
						clean(t, "a missing cwd")
					}

					// Refused names: a 400 that names them.
					for _, bad := range []map[string]string{{"LD_PRELOAD": "x"}, {"PATH": "/tmp"}, {"GLASSROOM_X": "x"}, {"1X": "x"}} {
						r := in("1")
						r.Envs = bad
						var ae struct {
							Error struct{ Code, Message string }
						}
						if st := g.Call(t, bearer, "POST", "/v1/sessions/"+sid+"/execute", r, &ae); st != http.StatusBadRequest {
							t.Fatalf("envs %v: %d, want 400", bad, st)
						}
						for k := range bad {
							if !strings.Contains(ae.Error.Message, k) {
								t.Fatalf("envs %v refused without naming it: %q", bad, ae.Error.Message)
							}
						}
					}
					r := in("1")
					r.Cwd = "../etc"
					if st := g.Call(t, bearer, "POST", "/v1/sessions/"+sid+"/execute", r, nil); st != http.StatusBadRequest {
						t.Fatalf("cwd outside the workspace: %d, want 400", st)
					}
					clean(t, "refused requests")
				})
			}
		})
	}
}
