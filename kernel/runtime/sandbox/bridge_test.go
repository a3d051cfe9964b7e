package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/kernel/kernels"
)

// bridgeCheck runs in python3 after the launcher's definitions, with a
// bridged kernel's name and profile (JSON) as arguments: it builds the
// launcher's Bridge for an ipc connection file and prints what the bridge
// would start the kernel with (argv, cwd, environment, the connection
// file it writes), without starting it.
const bridgeCheck = `
import json, os, shutil, sys, tempfile
name, profile = sys.argv[2], json.loads(sys.argv[3])
d = tempfile.mkdtemp()
conn = os.path.join(d, "kernel.json")
json.dump({"transport": "ipc", "ip": d + "/k", "shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5,
           "key": "secret", "signature_scheme": "hmac-sha256"}, open(conn, "w"))
os.environ.update({"R_PROFILE": "planted", "DENO_DIR": "planted", "NODE_OPTIONS": "planted", "KEEP": "kept"})
os.chdir(d)
b = Bridge(name, profile, conn)
argv, cwd, wait = b.prepare_ipc() if profile["transport"] == "ipc" else b.prepare_tcp()
env = b.kernel_env()
kconn = json.load(open(os.path.join(b.private, "kernel.json")))
print(json.dumps({"argv": argv, "cwd": cwd, "wait": wait is not None, "env": {k: env.get(k) for k in
    ["R_PROFILE", "DENO_DIR", "NODE_OPTIONS", "KEEP", "R_LIBS_USER", "NO_COLOR"]}, "private": b.private,
    "conn": os.path.join(b.private, "kernel.json"), "transport": kconn["transport"], "kernel_name": kconn.get("kernel_name"),
    "key": kconn["key"], "upstream": sorted(b.upstream), "dir": d}))
for s in b.reserved:
    s.close()
shutil.rmtree(b.private)
try:
    Bridge(name, {"transport": "carrier-pigeon", "argv": ["x"]}, conn)
    print("accepted")
except SystemExit as e:
    print("refused:", e)
`

// TestBridgeProfiles: the launcher's bridge starts each bridged kernel of
// the registry (R, Deno) as its profile says, with no branch on its name:
// the argv with its connection file, the environment the profile drops
// and sets (a fresh private directory for PrivateEnv), the kernel's own
// connection file (ipc beside the gateway's sockets, or tcp on reserved
// loopback ports), the working directory ("/" for a kernel that enters it
// by code); a profile it cannot use ends the launcher with a reason.
func TestBridgeProfiles(t *testing.T) {
	if strings.Contains(launcher, "self.kernel ==") || strings.Contains(launcher, `kernel == "`) {
		t.Fatal("launcher.py branches on a kernel's name: put the difference in its bridge profile (kernels.BridgeProfile)")
	}
	path := filepath.Join(t.TempDir(), "launcher.py")
	if err := os.WriteFile(path, []byte(launcher), 0o600); err != nil {
		t.Fatal(err)
	}
	code := "import sys\nns = {'__name__': 'launcher'}\nexec(compile(open(sys.argv[1]).read(), sys.argv[1], 'exec'), ns)\nglobals().update(ns)\n" + bridgeCheck
	bridged := 0
	for _, k := range kernels.All() {
		p := k.Launch.Bridge
		if k.Launch.Kind != kernels.Bridged {
			continue
		}
		bridged++
		t.Run(k.Name, func(t *testing.T) {
			profile, _ := json.Marshal(p)
			out, err := exec.Command("/usr/bin/python3", "-I", "-B", "-c", code, path, k.Name, string(profile)).CombinedOutput()
			lines := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)
			if err != nil || len(lines) != 2 {
				t.Fatalf("%v: %s", err, out)
			}
			var got struct {
				Argv               []string
				Cwd                string
				Wait               bool
				Env                map[string]*string
				Private, Conn, Dir string
				Transport, Key     string
				KernelName         *string `json:"kernel_name"`
				Upstream           []string
			}
			if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			for i, a := range p.Argv {
				want := strings.ReplaceAll(strings.ReplaceAll(a, "{conn_json}", `"`+got.Conn+`"`), "{conn}", got.Conn)
				if got.Argv[i] != want {
					t.Errorf("argv[%d] = %q, want %q", i, got.Argv[i], want)
				}
			}
			if !strings.Contains(strings.Join(got.Argv, " "), got.Conn) || got.Key != "secret" || got.Transport != p.Transport {
				t.Errorf("the kernel's connection file: %+v", got)
			}
			if p.KernelName != "" && (got.KernelName == nil || *got.KernelName != p.KernelName) {
				t.Errorf("kernel_name %v, want %s", got.KernelName, p.KernelName)
			}
			for name, v := range map[string]string{"R_PROFILE": "planted", "DENO_DIR": "planted", "NODE_OPTIONS": "planted"} {
				dropped := false
				for _, pre := range p.DropEnv {
					dropped = dropped || strings.HasPrefix(name, pre)
				}
				want, set := p.Env[name]
				if sub, ok := p.PrivateEnv[name]; ok {
					want, set = filepath.Join(got.Private, sub), true
				}
				g := got.Env[name]
				switch {
				case set && (g == nil || *g != want):
					t.Errorf("%s = %v, want %q (set by the profile)", name, g, want)
				case !set && dropped && g != nil:
					t.Errorf("%s = %q, want it dropped", name, *g)
				case !set && !dropped && (g == nil || *g != v):
					t.Errorf("%s = %v, want it kept", name, g)
				}
			}
			if g := got.Env["KEEP"]; g == nil || *g != "kept" {
				t.Errorf("KEEP = %v: the rest of the environment is kept", g)
			}
			wantCwd := got.Dir
			if p.ChdirCode != "" {
				wantCwd = "/"
			}
			if got.Cwd != wantCwd {
				t.Errorf("cwd %q, want %q", got.Cwd, wantCwd)
			}
			if p.Transport == "ipc" && (!got.Wait || strings.Join(got.Upstream, ",") != "control,hb,shell") {
				t.Errorf("ipc: waits for the kernel's sockets %v, upstream %v", got.Wait, got.Upstream)
			}
			if p.Transport == "tcp" && len(got.Upstream) != 5 {
				t.Errorf("tcp: upstream %v, want every channel", got.Upstream)
			}
			if !strings.HasPrefix(lines[1], "refused:") || !strings.Contains(lines[1], "no usable bridge profile") {
				t.Errorf("an unusable profile: %s", lines[1])
			}
		})
	}
	if bridged == 0 {
		t.Fatal("no bridged kernel in the registry")
	}
}
