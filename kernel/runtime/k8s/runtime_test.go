package k8s

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}

const ns = "glass"

func testConfig(instance string) Config {
	return Config{Namespace: ns, Instance: instance, CallTimeout: 5 * time.Second, ReconcileInterval: 100 * time.Millisecond,
		LeaseDuration: time.Second, DeleteGrace: time.Second, Common: sandbox.Common{StartTimeout: 60 * time.Second}}
}

// newClientset returns a fake API server that, like a real one, stamps a
// pod's creation time and refuses an update whose resourceVersion is stale
// (409) and bumps it on success: the fake's tracker does none of it, and
// adoption and lifetimes rely on it.
func newClientset() *fake.Clientset {
	cs := fake.NewClientset()
	// Like the API server, it stamps a new pod's creation time.
	cs.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if pod, ok := action.(k8stesting.CreateAction).GetObject().(*corev1.Pod); ok && pod.CreationTimestamp.IsZero() {
			pod.CreationTimestamp = metav1.Now()
		}
		return false, nil, nil
	})
	var mu sync.Mutex
	cs.PrependReactor("update", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		obj := action.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		cur, err := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), obj.Namespace, obj.Name)
		if err != nil {
			return true, nil, err
		}
		have := cur.(*corev1.Pod).ResourceVersion
		if obj.ResourceVersion != have {
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), obj.Name, errors.New("the object has been modified"))
		}
		n, _ := strconv.Atoi(have)
		obj = obj.DeepCopy()
		obj.ResourceVersion = strconv.Itoa(n + 1)
		if err := cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), obj, obj.Namespace); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
	return cs
}

func newRuntime(t testing.TB, cs *fake.Clientset, cfg Config) *Runtime {
	t.Helper()
	rt, err := New(context.Background(), cfg, cs, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func count(t *testing.T, cs *fake.Clientset) (pods, secrets int) {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := cs.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(p.Items), len(s.Items)
}

// TestCapabilities exercises the k8s runtime's optional capabilities on
// the simulated cluster: the workspace through the pod's agent, the tenant
// recorded on the pod, sandboxes that outlive the gateway, found in the
// cluster (OrphanFinder) and adopted; pods cannot freeze.
func TestCapabilities(t *testing.T) {
	cs := newClientset()
	startKubelet(t, cs, ns)
	n := 0
	runtimetest.Capabilities(t, newRuntime(t, cs, testConfig("gw-cap")), runtimetest.CapabilityOptions{
		NewID: func() string { n++; return "capability-" + strconv.Itoa(n) + "-k8s" },
	})
	if p, s := count(t, cs); p != 0 || s != 0 {
		t.Fatalf("after close: %d pods, %d secrets", p, s)
	}
}

// TestSimulatedCluster runs the runtime against the fake API server with a
// simulated kubelet that starts each pod's kernel (supervisor, ipykernel)
// and agent for real on this machine: start, code, restart (a new
// generation in the same pod), a kernel that dies, then gateway A going
// away and two gateways racing to adopt its session: one wins and finds
// the variables intact. (The workspace through the agent, orphans and
// adoption by the same instance: TestCapabilities.)
func TestSimulatedCluster(t *testing.T) {
	cs := newClientset()
	startKubelet(t, cs, ns)
	ctx := context.Background()
	rtA := newRuntime(t, cs, testConfig("gw-a"))

	k := runtimetest.Start(t, rtA, sandbox.Spec{ID: "sess-0001-abcdef", Tenant: "tenant1", Env: map[string]string{"MY_SETTING": "ok"}})
	// The gateway reaches the kernel only through the relay's sockets, in
	// a directory of its own.
	if info := k.Sandbox.Connection(); info.Transport != "ipc" {
		t.Fatalf("connection %+v", info)
	} else if st, err := os.Stat(filepath.Dir(info.IP)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("relay directory %s: %v %v", filepath.Dir(info.IP), st, err)
	}
	if k.Sandbox.Workspace() != "" {
		t.Fatal("a pod's workspace is not on this host")
	}
	if out, _ := k.Run(t, "x = 41\nimport os\nprint(os.environ['MY_SETTING'], os.path.basename(os.getcwd()))\n_ = open('out.txt', 'w').write('hi')"); strings.TrimSpace(out) != "ok workspace" {
		t.Fatalf("first run: %q", out)
	}

	// Restart: a new generation in the same pod; variables go, files stay.
	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	k.Reconnect(t)
	if out, _ := k.Run(t, "print('x' in dir(), open('out.txt').read())"); strings.TrimSpace(out) != "False hi" {
		t.Fatalf("after restart: %q", out)
	}
	// What the code left running does not outlive its kernel.
	out, _ := k.Run(t, "import subprocess; print(subprocess.Popen(['sleep', '300']).pid)")
	sleeper, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("pid %q", out)
	}

	// The kernel dies on its own: Exited, with the reason.
	exitOnItsOwn(t, k, 30*time.Second)
	// The supervisor kills what the dead kernel started (the SIGKILL may
	// still be landing as the exit is noticed): gone, or a zombie.
	var stat []byte
	if !testkit.Within(10*time.Second, func() bool {
		if err := syscall.Kill(sleeper, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		stat, _ = os.ReadFile("/proc/" + strconv.Itoa(sleeper) + "/stat")
		return strings.Contains(string(stat), ") Z")
	}) {
		t.Fatalf("a process the dead kernel started still runs: %s", stat)
	}
	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	k.Reconnect(t)
	k.Run(t, "y = 7")

	// Gateway A goes away without deleting anything.
	stA := k.Sandbox.(sandbox.Persistent).State()
	if err := k.Sandbox.(sandbox.Persistent).Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rtA.ReleaseLease(ctx); err != nil {
		t.Fatal(err)
	}
	rtB := newRuntime(t, cs, testConfig("gw-b"))
	rtC := newRuntime(t, cs, testConfig("gw-c"))
	list, err := rtB.Adoptable(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("adoptable: %+v %v", list, err)
	}
	a := list[0]
	if a.ID != "sess-0001-abcdef" || a.Tenant != "tenant1" || a.Owner != "gw-a" || a.Limits != rtB.cfg.Limits(sandbox.Limits{}) ||
		a.Connection.IP != KernelSockets || a.Connection.Key != k.Sandbox.Connection().Key || a.Expires.Sub(a.Created) < 11*time.Hour {
		t.Fatalf("adoptable %+v", a)
	}
	var wg sync.WaitGroup
	results := make([]sandbox.Sandbox, 2)
	errs := make([]error, 2)
	for i, rt := range []*Runtime{rtB, rtC} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _, errs[i] = rt.AdoptSession(ctx, a.ID)
		}()
	}
	wg.Wait()
	var won sandbox.Sandbox
	winner := ""
	for i, err := range errs {
		switch {
		case err == nil:
			if won != nil {
				t.Fatal("two gateways adopted the same session")
			}
			won, winner = results[i], []string{"gw-b", "gw-c"}[i]
		case !errors.Is(err, ErrAdoptConflict) && !errors.Is(err, ErrNotAdoptable):
			t.Fatalf("adopt: %v", err)
		}
	}
	if won == nil {
		t.Fatalf("nobody adopted: %v", errs)
	}
	defer func() { _ = won.Close(context.Background()) }()
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, PodName(a.ID), metav1.GetOptions{})
	if err != nil || pod.Labels[LabelInstance] != winner {
		t.Fatalf("owner label %v %v", pod.Labels, err)
	}
	adopted := runtimetest.Kernel{Sandbox: won}
	adopted.Reconnect(t)
	if out, _ := adopted.Run(t, "print(y)"); strings.TrimSpace(out) != "7" {
		t.Fatalf("variables after adoption: %q", out)
	}
	if l, _ := rtB.Adoptable(ctx); len(l) != 0 {
		t.Fatalf("still adoptable after adoption: %+v", l)
	}
	if st := won.(sandbox.Persistent).State(); st.ID != a.ID || st.Incarnation != stA.Incarnation || st.Conn.Key != a.Connection.Key {
		t.Fatalf("state after adoption %+v, before %+v", st, stA)
	}
	// The adopter restarts and closes it like its own.
	if err := won.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	adopted.Reconnect(t)
	if out, _ := adopted.Run(t, "print(open('out.txt').read())"); strings.TrimSpace(out) != "hi" {
		t.Fatalf("files after adoption and restart: %q", out)
	}
	if err := won.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if p, s := count(t, cs); p != 0 || s != 0 {
		t.Fatalf("after close: %d pods, %d secrets", p, s)
	}
}

func kernelOpts() kernel.ExecuteOptions { return kernel.ExecuteOptions{} }

// exitOnItsOwn makes k's kernel exit with status 3 and checks that the
// sandbox notices within wait and names the reason.
func exitOnItsOwn(t *testing.T, k runtimetest.Kernel, wait time.Duration) {
	t.Helper()
	exited := k.Sandbox.Exited()
	go func() { // ends with the execute's 10 s bound at most
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = k.Client.Execute(cctx, "import os; os._exit(3)", kernelOpts(), nil)
	}()
	select {
	case <-exited:
	case <-time.After(wait):
		t.Fatalf("the kernel's death was not noticed within %v", wait)
	}
	if r := k.Sandbox.ExitReason(); r != "exit code 3" {
		t.Fatalf("exit reason %q", r)
	}
}
