package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

// simKubelet stands in for a node: it watches the fake API server's pods
// and runs each for real on this machine. The kernel container's command
// (the supervisor, then the kernel) runs as a process with the pod's paths
// mapped to a temporary directory (its sockets, its contexts' and its
// spawn socket there); the agent runs in-process (ServeAgent) on the
// pod's IP (a loopback address of its own, 127.0.0.N, as a pod has its
// own network). Pod status follows: Running with containerIDs, Ready once
// the agent accepts, the kernel container's exit (exit code) and its
// restart (restartPolicy Always). The supervisor's scratch directories
// are the pod's tmp, shm, ipc and ctx directories. There is no isolation: it tests the runtime's
// API use, the supervisor and the agent, not the pod's hardening.
type simKubelet struct {
	t   testing.TB
	cs  *fake.Clientset
	ns  string
	dir string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	pods map[string]*simPod
	next int
}

type simPod struct {
	name, ip, dir string
	cancel        context.CancelFunc
	done          chan struct{}
}

func startKubelet(t testing.TB, cs *fake.Clientset, ns string) *simKubelet {
	t.Helper()
	testkit.RealThing(t, "real kernels under the simulated kubelet")
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Fatal("the simulated kubelet runs the kernel with /usr/bin/python3 and ipykernel (scripts/install-deps.sh installs them)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	// A short directory: unix socket paths are at most 107 bytes.
	dir, err := os.MkdirTemp("", "gk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	k := &simKubelet{t: t, cs: cs, ns: ns, dir: dir, ctx: ctx, cancel: cancel, pods: map[string]*simPod{}}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				pod, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					continue
				}
				switch {
				case ev.Type == watch.Added:
					k.run(pod)
				case ev.Type == watch.Deleted, ev.Type == watch.Modified && pod.DeletionTimestamp != nil:
					k.kill(pod.Name)
				}
			}
		}
	}()
	t.Cleanup(k.stop)
	return k
}

func (k *simKubelet) stop() {
	k.cancel()
	k.wg.Wait()
}

func (k *simKubelet) kill(name string) {
	k.mu.Lock()
	p := k.pods[name]
	delete(k.pods, name)
	k.mu.Unlock()
	if p != nil {
		p.cancel()
		<-p.done
	}
}

// setStatus updates the pod's status with f (retried on conflicts).
func (k *simKubelet) setStatus(name string, f func(*corev1.Pod)) {
	for range 20 {
		pod, err := k.cs.CoreV1().Pods(k.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return
		}
		f(pod)
		if _, err = k.cs.CoreV1().Pods(k.ns).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (k *simKubelet) run(pod *corev1.Pod) {
	k.mu.Lock()
	k.next++
	ip := "127.0.0." + strconv.Itoa(10+k.next)
	ctx, cancel := context.WithCancel(k.ctx)
	p := &simPod{name: pod.Name, ip: ip, dir: filepath.Join(k.dir, pod.Name), cancel: cancel, done: make(chan struct{})}
	k.pods[pod.Name] = p
	k.mu.Unlock()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		defer close(p.done)
		if err := k.runPod(ctx, p, pod); err != nil {
			k.t.Logf("simulated kubelet: pod %s: %v", pod.Name, err)
		}
	}()
}

func (k *simKubelet) runPod(ctx context.Context, p *simPod, pod *corev1.Pod) error {
	paths := map[string]string{}
	for _, sub := range []string{"workspace", "tmp", "shm", "ipc", "ctx", "control", "status", "secret", "agent"} {
		paths[sub] = filepath.Join(p.dir, sub)
		if err := os.MkdirAll(paths[sub], 0o755); err != nil {
			return err
		}
	}
	secret, err := k.cs.CoreV1().Secrets(k.ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var conn kernel.ConnectionInfo
	if err := json.Unmarshal(secret.Data[SecretKernelKey], &conn); err != nil {
		return err
	}
	conn.IP = filepath.Join(paths["ipc"], "k") // the pod's own ipc directory
	b, _ := json.Marshal(conn)
	if err := os.WriteFile(filepath.Join(paths["secret"], SecretKernelKey), b, 0o600); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(p.ip, strconv.Itoa(int(pod.Spec.Containers[1].Ports[0].ContainerPort))))
	if err != nil {
		return err
	}
	tlsConf, err := AgentServerTLS(secret.Data[SecretAgentCert], secret.Data[SecretAgentTLSKey])
	if err != nil {
		ln.Close()
		return err
	}
	agentDone := make(chan error, 1)
	go func() {
		// The simulated pods share the host's loopback: each agent listens
		// on its pod's own 127.0.0.x.
		agentDone <- ServeAgent(ctx, AgentConfig{Workspace: paths["workspace"], Token: string(secret.Data[SecretAgentKey]),
			Control: filepath.Join(paths["control"], "kernel.json"), Status: filepath.Join(paths["status"], "kernel.json"),
			QuotaBytes: 64 << 20, TLS: tlsConf, KernelIPC: conn.IP, ContextsDir: paths["ctx"],
			Spawn: filepath.Join(paths["status"], "spawn.sock")}, ln, zerolog.Nop())
	}()
	defer func() { <-agentDone }()

	c := pod.Spec.Containers[0]
	var settings SupervisorSettings
	if err := json.Unmarshal([]byte(c.Command[supervisorArgs]), &settings); err != nil {
		return err
	}
	settings.Argv = append([]string{}, c.Command[supervisorArgs+1:]...)
	settings.Secret = filepath.Join(paths["secret"], SecretKernelKey)
	settings.Conn = filepath.Join(paths["ipc"], "kernel.json")
	settings.Control = filepath.Join(paths["control"], "kernel.json")
	settings.Status = filepath.Join(paths["status"], "kernel.json")
	settings.Spawn = filepath.Join(paths["status"], "spawn.sock")
	settings.Contexts = paths["ctx"]
	settings.Workdir = paths["workspace"]
	settings.KillScope = "group"
	for i, d := range settings.Scratch {
		settings.Scratch[i] = map[string]string{"/tmp": paths["tmp"], "/dev/shm": paths["shm"], sandbox.IPCDir: paths["ipc"], sandbox.ContextsDir: paths["ctx"]}[d]
		if settings.Scratch[i] == "" {
			return fmt.Errorf("scratch directory %s not simulated", d)
		}
	}
	delete(settings.Rlimits, "RLIMIT_NPROC") // counts every process of this machine's user here
	for i, a := range settings.Argv {
		if a == sandbox.ConnFile {
			settings.Argv[i] = settings.Conn
		}
	}
	sj, _ := json.Marshal(settings)
	argv := append(append(append([]string{}, c.Command[2:supervisorArgs]...), string(sj)), settings.Argv...) // without tini
	var env []string
	for _, e := range c.Env {
		v := strings.Replace(e.Value, sandbox.WorkDir, paths["workspace"], 1)
		if strings.HasPrefix(v, "/tmp/") {
			v = paths["tmp"] + v[4:]
		}
		env = append(env, e.Name+"="+v)
	}
	k.setStatus(p.name, func(pod *corev1.Pod) {
		pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, p.ip
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	})
	for restarts := int32(0); ctx.Err() == nil; restarts++ {
		cid := fmt.Sprintf("sim://%s/kernel/%d", p.name, restarts)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Dir = env, paths["workspace"]
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return err
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		k.setStatus(p.name, func(pod *corev1.Pod) {
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: KernelContainer, Image: c.Image, ContainerID: cid, RestartCount: restarts, Started: ptr(true),
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, LastTerminationState: lastState(pod)},
				{Name: AgentContainer, ContainerID: "sim://" + p.name + "/agent", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			}
		})
		// The readiness probe: the agent accepts.
		go func() {
			for {
				select {
				case <-exited:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
					c.Close()
					k.setStatus(p.name, func(pod *corev1.Pod) {
						for i := range pod.Status.Conditions {
							if pod.Status.Conditions[i].Type == corev1.PodReady {
								pod.Status.Conditions[i].Status = corev1.ConditionTrue
							}
						}
					})
					return
				}
			}
		}()
		select {
		case <-exited:
			code := cmd.ProcessState.ExitCode()
			k.setStatus(p.name, func(pod *corev1.Pod) {
				for i := range pod.Status.ContainerStatuses {
					cs := &pod.Status.ContainerStatuses[i]
					if cs.Name == KernelContainer {
						cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: "Error", ContainerID: cid}}
					}
				}
			})
			time.Sleep(100 * time.Millisecond) // the kubelet restarts it (no back-off here)
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // the supervisor takes the kernel down
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
			return nil
		}
	}
	return nil
}

func lastState(pod *corev1.Pod) corev1.ContainerState {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == KernelContainer && cs.State.Terminated != nil {
			return corev1.ContainerState{Terminated: cs.State.Terminated}
		}
	}
	return corev1.ContainerState{}
}

func ptr[T any](v T) *T { return &v }

// connection returns the ipc connection of a simulated pod's first kernel
// as the gateway's machine sees it (for a client that skips the agent).
func (k *simKubelet) connection(pod, key string) kernel.ConnectionInfo {
	k.mu.Lock()
	defer k.mu.Unlock()
	info := kernel.NewIPCConnection(filepath.Join(k.pods[pod].dir, "ipc", "k"))
	info.Key = key
	return info
}
