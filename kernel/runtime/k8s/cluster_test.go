package k8s

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/k8s/k8stest"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// realCluster is k8stest.RealCluster: a namespace of its own on the test
// cluster.
func realCluster(t testing.TB) (kubernetes.Interface, string) {
	t.Helper()
	return k8stest.RealCluster(t)
}

// clusterConfig runs kernels under glassroom's own seccomp profile, which
// scripts/kube-up.sh installs as the kubelet's Localhost profile, with
// a quarter of a core each (the node has two, and a pod's requests equal its
// limits).
func clusterConfig(namespace, instance string) Config {
	return Config{Namespace: namespace, Instance: instance, SeccompLocalhostProfile: "glassroom-kernel.json", CallTimeout: 10 * time.Second, ReconcileInterval: time.Second,
		LeaseDuration: 3 * time.Second, DeleteGrace: time.Second, Common: sandbox.Common{StartTimeout: 120 * time.Second, Defaults: sandbox.Limits{CPUs: 0.25}}}
}

func newClusterRuntime(t testing.TB, cs kubernetes.Interface, cfg Config) *Runtime {
	t.Helper()
	rt, err := New(context.Background(), cfg, cs, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// TestRealCluster runs the runtime's contract on a real API server,
// scheduler and kubelet (scripts/kube-up.sh): the pod is admitted as it is
// under Pod Security "restricted", scheduled, its images found in
// containerd and its security context enforced by runc; then code, the
// environment, a restart (a new generation in the same pod: variables go,
// files stay), a kernel that dies (named), and gateway A going away while
// gateway B adopts the session with its variables.
func TestRealCluster(t *testing.T) {
	cs, namespace := realCluster(t)
	ctx := context.Background()
	rtA := newClusterRuntime(t, cs, clusterConfig(namespace, "gw-a"))
	k := runtimetest.Start(t, rtA, sandbox.Spec{ID: "real-0001-abcdef", Tenant: "tenant1", Env: map[string]string{"MY_SETTING": "ok"}})

	pod, err := cs.CoreV1().Pods(namespace).Get(ctx, PodName("real-0001-abcdef"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName == "" || pod.Status.PodIP == "" || k.Sandbox.Connection().Transport != "ipc" {
		t.Fatalf("pod not scheduled, or its kernel not reached through the relay: node %q, IP %q, connection %+v", pod.Spec.NodeName, pod.Status.PodIP, k.Sandbox.Connection())
	}
	if out, _ := k.Run(t, "x = 41\nimport os\nprint(os.environ['MY_SETTING'], os.getcwd())\n_ = open('out.txt', 'w').write('hi')"); strings.TrimSpace(out) != "ok "+sandbox.WorkDir {
		t.Fatalf("first run: %q", out)
	}
	// What the kernel is, as runc made it.
	out, _ := k.Run(t, `import os
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
print(os.getuid(), status["CapEff"].strip(), status["NoNewPrivs"].strip(), status["Seccomp"].strip(),
      os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount"), os.access("/", os.W_OK))`)
	if got, want := strings.Fields(out), []string{strconv.FormatInt(clusterConfig(namespace, "").withDefaults().sessionUID("real-0001-abcdef"), 10), "0000000000000000", "1", "2", "False", "False"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("uid, capabilities, no_new_privs, seccomp, token, writable root: got %v, want %v", got, want)
	}

	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	k.Reconnect(t)
	if out, _ := k.Run(t, "print('x' in dir(), open('out.txt').read())"); strings.TrimSpace(out) != "False hi" {
		t.Fatalf("after restart: %q", out)
	}

	exitOnItsOwn(t, k, 60*time.Second)
	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	k.Reconnect(t)
	k.Run(t, "y = 7")

	// Gateway A goes away without deleting anything; B adopts.
	if err := k.Sandbox.(sandbox.Persistent).Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rtA.ReleaseLease(ctx); err != nil {
		t.Fatal(err)
	}
	rtB := newClusterRuntime(t, cs, clusterConfig(namespace, "gw-b"))
	won, _, err := rtB.AdoptSession(ctx, "real-0001-abcdef")
	if err != nil {
		t.Fatalf("adopt: %v", err)
	}
	adopted := runtimetest.Kernel{Sandbox: won}
	adopted.Reconnect(t)
	if out, _ := adopted.Run(t, "print(y)"); strings.TrimSpace(out) != "7" {
		t.Fatalf("variables after adoption: %q", out)
	}
	if err := won.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !testkit.Within(60*time.Second, func() bool {
		_, err := cs.CoreV1().Pods(namespace).Get(ctx, PodName("real-0001-abcdef"), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) {
		t.Fatal("the pod outlived its session's close")
	}
}

// TestRealClusterCapabilities: the workspace through the pod agent, the
// tenant on the pod, sandboxes that outlive the gateway found and
// adopted, on the real cluster.
func TestRealClusterCapabilities(t *testing.T) {
	cs, namespace := realCluster(t)
	n := 0
	runtimetest.Capabilities(t, newClusterRuntime(t, cs, clusterConfig(namespace, "gw-cap")), runtimetest.CapabilityOptions{
		NewID: func() string { n++; return "capability-" + strconv.Itoa(n) + "-real" },
	})
}

// TestRealClusterPodSecurity: the namespace's admission refuses a pod that
// is not "restricted" (so the runtime's pods passing is not an accident of
// a permissive cluster).
func TestRealClusterPodSecurity(t *testing.T) {
	cs, namespace := realCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := cs.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "root-pod"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "glassroom/python-kernel:latest"}}}}, metav1.CreateOptions{})
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) || !strings.Contains(err.Error(), "restricted") {
		t.Fatalf("a non-restricted pod: want refused by PodSecurity, got %v", err)
	}
}

// TestRealClusterHardening runs the hardening suite of the other runtimes
// on the real cluster's pods.
func TestRealClusterHardening(t *testing.T) {
	cs, namespace := realCluster(t)
	n := 0
	runtimetest.Hardening(t, newClusterRuntime(t, cs, clusterConfig(namespace, "gw-hard")), runtimetest.HardeningOptions{DeniedSocketErrno: int(syscall.EPERM)}, func() string {
		n++
		return "hardening-" + strconv.Itoa(n) + "-real"
	})
}

// attackFromKernel is run by one session's kernel against another pod:
// the five kernel ports on its address (TCP, then a ZeroMQ SUB on IOPub
// for 3 s), then its agent's kernel channel tunnel over TLS without the
// session's token and with a made-up one, and the agent's plain-HTTP port.
const attackFromKernel = `import socket, ssl, time, zmq
ip = %q
res = []
for port in range(50001, 50006):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((ip, port)); res.append("%%d:open" %% port)
    except OSError as e:
        res.append("%%d:%%s" %% (port, type(e).__name__))
    finally:
        s.close()
ctx = zmq.Context(); sub = ctx.socket(zmq.SUB); sub.setsockopt(zmq.SUBSCRIBE, b""); sub.setsockopt(zmq.LINGER, 0)
sub.connect("tcp://%%s:50002" %% ip)
got = sub.poll(3000)
res.append("iopub:%%s" %% ("messages" if got else "nothing"))
sub.close(); ctx.term()
def tunnel(token, path="/v1/channel/iopub"):
    tls = ssl.create_default_context(); tls.check_hostname = False; tls.verify_mode = ssl.CERT_NONE
    with socket.create_connection((ip, 8790), timeout=5) as raw, tls.wrap_socket(raw) as c:
        auth = "Authorization: Bearer %%s\r\n" %% token if token else ""
        c.sendall(("GET " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Connection: Upgrade\r\nUpgrade: glassroom-channel\r\n\r\n").encode())
        return c.recv(100).split(b"\r\n")[0].decode()
def plain():
    with socket.create_connection((ip, 8790), timeout=5) as s:
        s.sendall(b"GET /v1/kernel HTTP/1.1\r\nHost: x\r\n\r\n")
        return s.recv(100).split(b"\r\n")[0].decode()
for name, f in [("tunnel-no-token", lambda: tunnel(None)), ("tunnel-wrong-token", lambda: tunnel("0" * 64)),
                ("spawn-no-token", lambda: tunnel(None, "/v1/spawn")), ("spawn-wrong-token", lambda: tunnel("0" * 64, "/v1/spawn")),
                ("context-no-token", lambda: tunnel(None, "/v1/context/a/channel/shell")), ("plain-http", plain)]:
    try:
        res.append(name + ":" + f().replace(" ", "_"))
    except Exception as e:
        res.append(name + ":" + type(e).__name__)
print(" ".join(res))`

// TestRealClusterKernelPortsUnreachable: on a cluster whose network
// enforces nothing (the bridge plugin ignores NetworkPolicy), another
// pod, an attacker's kernel, gets nothing from a victim's kernel pod: no
// kernel port is open on the pod's address (the kernel listens on unix
// sockets in the pod; pods of earlier versions listened on these ports of
// its loopback), a ZeroMQ subscription to its IOPub hears nothing while
// the victim prints, and the agent's tunnels (a channel, a context's
// channel, the supervisor's spawn socket) refuse a request without the
// session's token or with another; the agent speaks only TLS.
func TestRealClusterKernelPortsUnreachable(t *testing.T) {
	cs, namespace := realCluster(t)
	ctx := context.Background()
	rt := newClusterRuntime(t, cs, clusterConfig(namespace, "gw-net"))
	victim := runtimetest.Start(t, rt, sandbox.Spec{ID: "victim-0001", Tenant: "tenant-a"})
	attacker := runtimetest.Start(t, rt, sandbox.Spec{ID: "attacker-0001", Tenant: "tenant-b"})
	pod, err := cs.CoreV1().Pods(namespace).Get(ctx, PodName("victim-0001"), metav1.GetOptions{})
	if err != nil || pod.Status.PodIP == "" {
		t.Fatalf("victim pod: %v", err)
	}
	// The victim prints from a thread (20 s at most): IOPub is busy
	// throughout the attack; it stops before the victim's own last check.
	victim.Run(t, "import threading\nquiet = threading.Event()\ndef talk():\n    i = 0\n    while not quiet.wait(0.1) and i < 200:\n        print('victim secret', i, flush=True); i += 1\ntalker = threading.Thread(target=talk, daemon=True)\ntalker.start()")
	out, ename := attacker.Run(t, fmt.Sprintf(attackFromKernel, pod.Status.PodIP))
	if ename != "" {
		t.Fatalf("attack: %s %s", ename, out)
	}
	got := strings.Fields(out)
	want := []string{"50001:ConnectionRefusedError", "50002:ConnectionRefusedError", "50003:ConnectionRefusedError", "50004:ConnectionRefusedError",
		"50005:ConnectionRefusedError", "iopub:nothing", "tunnel-no-token:HTTP/1.1_401_Unauthorized", "tunnel-wrong-token:HTTP/1.1_401_Unauthorized",
		"spawn-no-token:HTTP/1.1_401_Unauthorized", "spawn-wrong-token:HTTP/1.1_401_Unauthorized", "context-no-token:HTTP/1.1_401_Unauthorized",
		"plain-http:HTTP/1.0_400_Bad_Request"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("from another pod:\n got %v\nwant %v", got, want)
	}
	// The victim's own gateway still reaches it through the agent.
	victim.Run(t, "quiet.set(); talker.join()")
	if out, _ := victim.Run(t, "print(1 + 1)"); strings.TrimSpace(out) != "2" {
		t.Fatalf("victim: %q", out)
	}
}

// TestRealClusterKernelWithoutToken: what holds for a kernel that can reach
// the API server (the network enforces no NetworkPolicy; the test cluster
// routes pods to the kubernetes Service as any cluster does): the pod
// mounts no service account token, the kernel's environment names no
// Service, and the API server refuses an anonymous client everything but
// discovery (401 or 403 for secrets, pods, leases).
func TestRealClusterKernelWithoutToken(t *testing.T) {
	cs, namespace := realCluster(t)
	k := runtimetest.Start(t, newClusterRuntime(t, cs, clusterConfig(namespace, "gw-api")), sandbox.Spec{ID: "api-0001-abcdef", Tenant: "tenant1"})
	out, _ := k.Run(t, `import os, ssl, urllib.request, urllib.error
tls = ssl.create_default_context(); tls.check_hostname = False; tls.verify_mode = ssl.CERT_NONE
res = [str(os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount")), str(sorted(k for k in os.environ if k.startswith("KUBERNETES_")))]
for path in ("/api/v1/namespaces/`+namespace+`/secrets", "/api/v1/pods", "/apis/coordination.k8s.io/v1/namespaces/`+namespace+`/leases"):
    try:
        urllib.request.urlopen("https://10.97.0.1" + path, context=tls, timeout=10); res.append("open")
    except urllib.error.HTTPError as e:
        res.append(str(e.code))
    except Exception as e:
        res.append(type(e).__name__)
print(" ".join(res))`)
	t.Logf("from the kernel: %s", strings.TrimSpace(out))
	f := strings.Fields(out)
	if len(f) != 5 || f[0] != "False" || f[1] != "[]" {
		t.Fatalf("the kernel has a token or names the API server: %q", out)
	}
	for _, code := range f[2:] {
		if code != "401" && code != "403" {
			t.Fatalf("the API server answered an anonymous kernel %s (want 401 or 403): %q", code, out)
		}
	}
}

// TestRealClusterPodEndsAtItsDeadline: a pod whose gateway is gone for
// good (detached, its lease released, no other gateway) is ended by the
// kubelet at its maximum lifetime and margin (activeDeadlineSeconds):
// no session outlives its gateway's --max-lifetime. Without the deadline
// the pod ran on for ever.
func TestRealClusterPodEndsAtItsDeadline(t *testing.T) {
	cs, namespace := realCluster(t)
	ctx := context.Background()
	cfg := clusterConfig(namespace, "gw-gone")
	cfg.MaxLifetime, cfg.DeadlineMargin = 15*time.Second, time.Second
	rt := newClusterRuntime(t, cs, cfg)
	k := runtimetest.Start(t, rt, sandbox.Spec{ID: "deadline-0001-abcdef", Tenant: "tenant1"})
	k.Run(t, "x = 1")
	if err := k.Sandbox.(sandbox.Persistent).Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.ReleaseLease(ctx); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	var last string
	if !testkit.Within(2*time.Minute, func() bool {
		pod, err := cs.CoreV1().Pods(namespace).Get(ctx, PodName("deadline-0001-abcdef"), metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return apierrors.IsNotFound(err)
		}
		last = string(pod.Status.Phase) + " " + pod.Status.Reason
		return pod.Status.Phase == corev1.PodFailed && pod.Status.Reason == "DeadlineExceeded"
	}) {
		t.Fatalf("the pod of a gateway gone for good outlived its deadline: %s", last)
	}
}

// TestRealClusterLanguages runs the language table (runtimetest.Languages)
// on real pods: every kernel of the registry as a pod's first kernel.
func TestRealClusterLanguages(t *testing.T) {
	cs, namespace := realCluster(t)
	n := 0
	runtimetest.RunLanguages(t, newClusterRuntime(t, cs, clusterConfig(namespace, "gw-lang")), func() string {
		n++
		return "language-" + strconv.Itoa(n) + "-real"
	})
}

// TestRealClusterContexts runs the contexts suite (runtimetest.Contexts) on
// real pods: each context one more kernel in the pod, started by its
// supervisor, under the pod's limits (the memory limit covers them all);
// as on docker, the first kernel's restart ends them, and they say so.
func TestRealClusterContexts(t *testing.T) {
	cs, namespace := realCluster(t)
	n := 0
	runtimetest.Contexts(t, newClusterRuntime(t, cs, clusterConfig(namespace, "gw-ctx")), runtimetest.ContextOptions{
		NewID:                    func() string { n++; return "contexts-" + strconv.Itoa(n) + "-real" },
		FirstRestartEndsContexts: true,
		OOMReason:                "OOMKilled",
	})
}

// TestRealClusterCommands runs the commands suite (runtimetest.Commands,
// terminals included) on real pods: commands through the pod's agent and
// supervisor, killed before a kernel when memory runs out.
func TestRealClusterCommands(t *testing.T) {
	cs, namespace := realCluster(t)
	n := 0
	runtimetest.Commands(t, newClusterRuntime(t, cs, clusterConfig(namespace, "gw-cmd")), runtimetest.CommandsOptions{PodNetwork: true}, func() string {
		n++
		return "commands-" + strconv.Itoa(n) + "-real"
	})
}

// TestRealClusterRichOutput and TestRealClusterDebugger: the python3
// kernel's structured rich output and the Jupyter debugger in a pod.
func TestRealClusterRichOutput(t *testing.T) {
	cs, namespace := realCluster(t)
	runtimetest.RichOutput(t, newClusterRuntime(t, cs, clusterConfig(namespace, "gw-rich")), "rich-output-real")
}

func TestRealClusterDebugger(t *testing.T) {
	cs, namespace := realCluster(t)
	// The pod's network namespace is its agent's too: its port listens.
	runtimetest.Debugger(t, newClusterRuntime(t, cs, clusterConfig(namespace, "gw-debug")), "debugger-real", clusterConfig("", "").withDefaults().AgentPort)
}
