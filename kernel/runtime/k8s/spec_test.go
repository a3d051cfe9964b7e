package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPodSpecHardening asserts every hardening field of a kernel pod, as
// the docker runtime's flags map to them (docs/security.md: Kubernetes
// runtime).
func TestPodSpecHardening(t *testing.T) {
	cfg := testConfig("gw-a")
	cfg.RuntimeClassName = "gvisor"
	cfg = cfg.withDefaults()
	limits := sandbox.Limits{MemoryMB: 1024, CPUs: 1.5, Pids: 256, WorkspaceMB: 300}
	spec := sandbox.Spec{ID: "sess-0002-abcdef", Tenant: "t1", Env: map[string]string{"A": "b"}}
	pod, err := cfg.buildPod(spec, limits, time.Unix(1000, 0))
	if err != nil {
		t.Fatal(err)
	}
	ps := pod.Spec
	uid := cfg.sessionUID(spec.ID)
	if uid < 1000000 || uid == cfg.sessionUID("sess-0003-abcdef") {
		t.Fatalf("uid %d", uid)
	}
	check := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s", what)
		}
	}
	check("automountServiceAccountToken false", ps.AutomountServiceAccountToken != nil && !*ps.AutomountServiceAccountToken)
	check("enableServiceLinks false", ps.EnableServiceLinks != nil && !*ps.EnableServiceLinks)
	check("no host namespaces", !ps.HostNetwork && !ps.HostPID && !ps.HostIPC && ps.ShareProcessNamespace != nil && !*ps.ShareProcessNamespace)
	check("runtimeClassName", ps.RuntimeClassName != nil && *ps.RuntimeClassName == "gvisor")
	check("restartPolicy Always", ps.RestartPolicy == corev1.RestartPolicyAlways)
	check("grace period", ps.TerminationGracePeriodSeconds != nil && *ps.TerminationGracePeriodSeconds == 1)
	check("activeDeadlineSeconds: the maximum lifetime and a minute", ps.ActiveDeadlineSeconds != nil &&
		*ps.ActiveDeadlineSeconds == int64((cfg.MaxLifetime+time.Minute)/time.Second))
	psc := ps.SecurityContext
	check("pod runAsNonRoot, per-session uid, fsGroup", psc != nil && *psc.RunAsNonRoot && *psc.RunAsUser == uid && *psc.RunAsGroup == uid && *psc.FSGroup == uid)
	check("pod seccomp RuntimeDefault", psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault)
	if len(ps.Containers) != 2 || len(ps.InitContainers) != 0 {
		t.Fatalf("containers %d", len(ps.Containers))
	}
	for _, c := range ps.Containers {
		sc := c.SecurityContext
		check(c.Name+": runAsNonRoot with the session uid", sc != nil && *sc.RunAsNonRoot && *sc.RunAsUser == uid && *sc.RunAsGroup == uid)
		check(c.Name+": readOnlyRootFilesystem", *sc.ReadOnlyRootFilesystem)
		check(c.Name+": allowPrivilegeEscalation false, not privileged", !*sc.AllowPrivilegeEscalation && !*sc.Privileged)
		check(c.Name+": drop ALL capabilities", sc.Capabilities != nil && len(sc.Capabilities.Add) == 0 && len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL")
		check(c.Name+": seccomp", sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault)
		check(c.Name+": requests equal limits (Guaranteed)", c.Resources.Requests.Cpu().Equal(*c.Resources.Limits.Cpu()) && c.Resources.Requests.Memory().Equal(*c.Resources.Limits.Memory()))
		check(c.Name+": no stdin or tty", !c.Stdin && !c.TTY)
	}
	k, a := ps.Containers[0], ps.Containers[1]
	check("kernel image", k.Name == KernelContainer && k.Image == "glassroom/python-kernel:latest")
	check("agent image", a.Name == AgentContainer && a.Image == "glassroom/gateway:latest" && a.Command[1] == "pod-agent")
	check("kernel memory limit", k.Resources.Limits.Memory().Equal(resource.MustParse("1Gi")))
	check("kernel cpu limit", k.Resources.Limits.Cpu().Equal(resource.MustParse("1500m")))
	check("kernel runs tini, python -I", k.Command[0] == "/usr/bin/tini" && k.Command[2] == "/usr/bin/python3" && k.Command[3] == "-I")
	var settings SupervisorSettings
	if err := json.Unmarshal([]byte(k.Command[supervisorArgs]), &settings); err != nil {
		t.Fatal(err)
	}
	settings.Argv = k.Command[supervisorArgs+1:]
	check("supervisor: the shared launcher", strings.Join(settings.Argv, " ") == strings.Join(sandbox.KernelArgv("/usr/bin/python3", "", sandbox.ConnFile), " "))
	// Every kernel of the registry can be a pod's first, and each argument
	// fits the kernel's bound on one (MAX_ARG_STRLEN, 128 KiB).
	for _, ks := range sandbox.Kernels() {
		kp, err := cfg.buildPod(sandbox.Spec{ID: spec.ID, Kernel: ks.Name}, limits, time.Unix(1000, 0))
		if err != nil {
			t.Fatal(err)
		}
		command := kp.Spec.Containers[0].Command
		fits := true
		for _, arg := range command {
			fits = fits && len(arg) < 128<<10
		}
		check("supervisor: the "+ks.Name+" kernel, each argument within the bound", fits &&
			strings.Join(command[supervisorArgs+1:], " ") == strings.Join(sandbox.KernelArgv("/usr/bin/python3", ks.Name, sandbox.ConnFile), " "))
	}
	check("supervisor: rlimits nproc=pids, no core", settings.Rlimits["RLIMIT_NPROC"] == 256 && settings.Rlimits["RLIMIT_CORE"] == 0 && settings.Rlimits["RLIMIT_NOFILE"] == 1024)
	check("supervisor kills everything between generations", settings.KillScope == "all")
	scratch := map[string]bool{}
	for _, d := range settings.Scratch {
		scratch[d] = true
	}
	emptyDirs := map[string]bool{}
	for _, v := range ps.Volumes {
		emptyDirs[v.Name] = v.EmptyDir != nil
	}
	for _, m := range k.VolumeMounts {
		kept := m.MountPath == sandbox.WorkDir || m.MountPath == sandbox.WorkspaceAlias || m.MountPath == statusDir
		check("supervisor empties "+m.MountPath+" between generations",
			scratch[m.MountPath] == (emptyDirs[m.Name] && !m.ReadOnly && !kept))
	}
	check("supervisor empties /tmp, /dev/shm and the ipc directories", scratch["/tmp"] && scratch["/dev/shm"] &&
		scratch[sandbox.IPCDir] && scratch[sandbox.ContextsDir] && len(scratch) == 4)
	check("supervisor: the spawn socket where the kernel writes and the agent reads", settings.Spawn == SpawnSocket && filepath.Dir(SpawnSocket) == statusDir &&
		settings.Contexts == sandbox.ContextsDir)
	agentMounts := map[string]bool{}
	for _, m := range a.VolumeMounts {
		agentMounts[m.MountPath] = m.ReadOnly
	}
	ro, mounted := agentMounts[sandbox.IPCDir]
	ctxRO, ctxMounted := agentMounts[sandbox.ContextsDir]
	check("the agent reaches the kernels' sockets, read-only", mounted && ro && ctxMounted && ctxRO)
	env := map[string]string{}
	for _, e := range k.Env {
		env[e.Name] = e.Value
	}
	check("kernel env", env["A"] == "b" && env["HOME"] == sandbox.WorkDir && env["JUPYTER_NO_CONFIG"] == "1")
	check("the agent gets no kernel env", len(a.Env) == 0)

	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	ws := vols["workspace"].EmptyDir
	check("workspace emptyDir with sizeLimit", ws != nil && ws.SizeLimit.Equal(resource.MustParse("300Mi")) && ws.Medium == "")
	for name, size := range map[string]string{"tmp": "256Mi", "shm": "64Mi", "ipc": "1Mi", "control": "1Mi", "status": "1Mi"} {
		e := vols[name].EmptyDir
		check(name+": memory-backed emptyDir "+size, e != nil && e.Medium == corev1.StorageMediumMemory && e.SizeLimit.Equal(resource.MustParse(size)))
	}
	// Each container sees only its own items of the session's Secret.
	for name, keys := range map[string][]string{"kernel-secret": {SecretKernelKey}, "agent-secret": {SecretAgentKey, SecretAgentCert, SecretAgentTLSKey}} {
		s := vols[name].Secret
		var got []string
		if s != nil {
			for _, it := range s.Items {
				got = append(got, it.Key)
			}
		}
		check(name+": its items of the session's Secret, mode 0440", s != nil && s.SecretName == PodName(spec.ID) && strings.Join(got, ",") == strings.Join(keys, ",") && *s.DefaultMode == 0o440)
	}
	mounts := func(c corev1.Container) map[string]corev1.VolumeMount {
		m := map[string]corev1.VolumeMount{}
		for _, vm := range c.VolumeMounts {
			if _, seen := m[vm.Name]; !seen { // the workspace's first mount, not its alias
				m[vm.Name] = vm
			}
		}
		return m
	}
	km, am := mounts(k), mounts(a)
	check("kernel: control read-only, status writable", km["control"].ReadOnly && !km["status"].ReadOnly)
	check("agent: control writable, status read-only", !am["control"].ReadOnly && am["status"].ReadOnly)
	check("the kernel never sees the agent's token", km["agent-secret"].Name == "")
	check("the agent never sees the kernel's key", am["kernel-secret"].Name == "")
	check("kernel /tmp and /home/user", km["tmp"].MountPath == "/tmp" && km["workspace"].MountPath == sandbox.WorkDir && km["shm"].MountPath == "/dev/shm")
	aliased := false
	for _, vm := range k.VolumeMounts {
		aliased = aliased || (vm.Name == "workspace" && vm.MountPath == sandbox.WorkspaceAlias)
	}
	check("the kernel's workspace again at /workspace", aliased)
	check("no kernel port or probe on the pod's address; the agent's probe over TLS", k.ReadinessProbe == nil && len(k.Ports) == 0 &&
		a.ReadinessProbe.HTTPGet.Path == "/healthz" && a.ReadinessProbe.HTTPGet.Scheme == corev1.URISchemeHTTPS)
	check("the agent's TLS files and the kernels' sockets", strings.Contains(strings.Join(a.Command, " "), "--tls-cert "+AgentCertFile+" --tls-key "+AgentKeyFile+
		" --kernel-ipc "+KernelSockets+" --contexts "+sandbox.ContextsDir+" --spawn "+SpawnSocket))

	check("labels", pod.Labels[LabelSession] == spec.ID && pod.Labels[LabelTenant] == "t1" && pod.Labels[LabelInstance] == "gw-a" && pod.Labels[LabelComponent] == "kernel")
	var got sandbox.Limits
	check("limits annotation", json.Unmarshal([]byte(pod.Annotations[AnnotationLimits]), &got) == nil && got == limits)
	check("expiry annotation", pod.Annotations[AnnotationExpires] == time.Unix(1000, 0).Add(12*time.Hour).UTC().Format(time.RFC3339))

	cfg.SeccompLocalhostProfile = "glassroom/kernel.json"
	cfg.WorkspaceMedium = "Memory"
	pod, _ = cfg.buildPod(spec, limits, time.Now())
	sp := pod.Spec.SecurityContext.SeccompProfile
	check("localhost seccomp profile", sp.Type == corev1.SeccompProfileTypeLocalhost && *sp.LocalhostProfile == "glassroom/kernel.json")
	check("memory-backed workspace", pod.Spec.Volumes[0].EmptyDir.Medium == corev1.StorageMediumMemory)

	sec, err := cfg.buildSecret(spec, "k3y", "t0ken", []byte("CERT"), []byte("KEY"))
	if err != nil {
		t.Fatal(err)
	}
	var conn kernel.ConnectionInfo
	check("secret: the kernel listens on unix sockets in the pod only", json.Unmarshal(sec.Data[SecretKernelKey], &conn) == nil && conn.IP == KernelSockets && conn.Transport == "ipc" && conn.Key == "k3y")
	check("secret: the agent's certificate and key", string(sec.Data[SecretAgentCert]) == "CERT" && string(sec.Data[SecretAgentTLSKey]) == "KEY")
	check("secret immutable, labelled", *sec.Immutable && sec.Labels[LabelSession] == spec.ID && string(sec.Data[SecretAgentKey]) == "t0ken")
}

// TestCPURequestRatio: below 1, each container requests that share of its
// CPU limit (at least a millicore) and all of its memory.
func TestCPURequestRatio(t *testing.T) {
	for _, c := range []struct {
		ratio                   float64
		kernelMilli, agentMilli int64
	}{{0, 1500, 250}, {1, 1500, 250}, {0.1, 150, 25}, {0.0001, 1, 1}} {
		cfg := testConfig("gw-a")
		cfg.CPURequestRatio = c.ratio
		cfg = cfg.withDefaults()
		pod, err := cfg.buildPod(sandbox.Spec{ID: "sess-0002-abcdef"}, sandbox.Limits{MemoryMB: 1024, CPUs: 1.5, Pids: 256, WorkspaceMB: 300}, time.Unix(1000, 0))
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []int64{c.kernelMilli, c.agentMilli} {
			res := pod.Spec.Containers[i].Resources
			if got := res.Requests.Cpu().MilliValue(); got != want || !res.Requests.Memory().Equal(*res.Limits.Memory()) {
				t.Errorf("ratio %g, %s: requests %v of limits %v, want %dm CPU and the memory limit", c.ratio, pod.Spec.Containers[i].Name, res.Requests, res.Limits, want)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Namespace: "Bad_NS"}, {Instance: "a/b"}, {WorkspaceMedium: "HugePages"}, {ImagePullPolicy: "Sometimes"},
		{AgentPort: 80}, {AgentPort: 70000}, {LeaseDuration: time.Second, RenewInterval: 2 * time.Second}, {CPURequestRatio: 1.5}, {AdvertiseURL: "ftp://x"}, {AdvertiseURL: "http://u:p@10.0.0.1:8888"}, {AdvertiseURL: "http://10.0.0.1:8888/x"},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// kubelet answers pod creations in the fake API server with status,
// standing in for a node that cannot run them.
func fakeKubelet(t *testing.T, cs *fake.Clientset, status func(*corev1.Pod)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-w.ResultChan():
				pod, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type != watch.Added {
					continue
				}
				pod = pod.DeepCopy()
				status(pod)
				_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestStartFailures: what the pod's status says reaches the caller as a
// clear ErrUnavailable, fast when waiting cannot help, and nothing is left.
func TestStartFailures(t *testing.T) {
	waiting := func(reason, msg string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: KernelContainer, Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
		}
	}
	cases := []struct {
		name   string
		status func(*corev1.Pod)
		want   string
		fast   bool
	}{
		{"image pull", waiting("ErrImagePull", "pull access denied"), "image glassroom/python-kernel:latest of container kernel cannot be pulled (ErrImagePull): pull access denied", true},
		{"image pull back-off", waiting("ImagePullBackOff", "Back-off pulling image"), "cannot be pulled (ImagePullBackOff)", true},
		{"config error", waiting("CreateContainerConfigError", `secret "x" not found`), "container kernel cannot start (CreateContainerConfigError)", true},
		{"OOM at start", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: KernelContainer,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}
		}, "container kernel keeps exiting: OOMKilled: the kernel exceeded its memory limit of 2048 MB", true},
		{"evicted", func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
		}, "pod Failed: Evicted: The node was low on resource: memory.", true},
		{"unschedulable", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/3 nodes are available: 3 Insufficient memory."}}
		}, "the pod cannot be scheduled (Unschedulable): 0/3 nodes are available: 3 Insufficient memory.", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := newClientset()
			fakeKubelet(t, cs, tc.status)
			cfg := testConfig("gw-a")
			cfg.StartTimeout = 2 * time.Second
			rt := newRuntime(t, cs, cfg)
			start := time.Now()
			sb, err := rt.Start(context.Background(), sandbox.Spec{ID: "sess-0009-abcdef"})
			if err == nil {
				sb.Close(context.Background())
				t.Fatal("started")
			}
			if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if fast := time.Since(start) < cfg.StartTimeout; fast != tc.fast {
				t.Fatalf("failed fast: %v, want %v (%v)", fast, tc.fast, time.Since(start))
			}
			if p, s := count(t, cs); p != 0 || s != 0 {
				t.Fatalf("left behind: %d pods, %d secrets", p, s)
			}
			if rt.live.Has("sess-0009-abcdef") {
				t.Fatal("session still claimed")
			}
		})
	}
}

// TestKernelGone: how a running kernel's end reads in the pod's status.
func TestKernelGone(t *testing.T) {
	pod := func(cs corev1.ContainerStatus) *corev1.Pod {
		cs.Name = KernelContainer
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{cs}}}
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{pod(corev1.ContainerStatus{ContainerID: "c1", State: running}), ""},
		{pod(corev1.ContainerStatus{ContainerID: "c2", State: running, LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "c1", Reason: "OOMKilled", ExitCode: 137}}}),
			"OOMKilled: the kernel exceeded its memory limit of 512 MB"},
		{pod(corev1.ContainerStatus{ContainerID: "c1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "c1", Reason: "Error", ExitCode: 2}}}), "exit code 2"},
		{pod(corev1.ContainerStatus{ContainerID: "c3", State: running}), "the kernel container restarted"},
		{&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}}, "pod Failed: Evicted"},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: time.Now()}}}, "the pod is being deleted"},
	} {
		reason, gone := kernelGone(tc.pod, "c1", 512)
		if reason != tc.want || gone != (tc.want != "") {
			t.Errorf("got %q %v, want %q", reason, gone, tc.want)
		}
	}
}

// TestReconcile: which pods a gateway deletes, and which it leaves to
// their live gateway or to adoption.
func TestReconcile(t *testing.T) {
	cs := newClientset()
	ctx := context.Background()
	cfg := testConfig("gw-a")
	cfg.OrphanGrace = time.Hour
	rt := newRuntime(t, cs, cfg)
	rtB := newRuntime(t, cs, testConfig("gw-b")) // alive: its lease is fresh
	_ = rtB
	// gw-dead's lease is renewed no more: it lapses a second after this
	// gateway first sees it (TestLeaseJudgedOnOwnClock).
	old := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	secs, holder := int32(1), "gw-dead"
	if _, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeasePrefix + holder,
		Labels: map[string]string{LabelName: "glassroom", LabelComponent: "gateway"}},
		Spec: coordv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &old, LeaseDurationSeconds: &secs}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		alive, err := rt.aliveGateways(ctx)
		return err == nil && !alive[holder] && alive["gw-b"]
	}, "gw-dead's lease to lapse, gw-b's to stay")
	mk := func(id, owner string, created time.Time, phase corev1.PodPhase) {
		c := cfg.withDefaults()
		c.Instance = owner
		pod, _ := c.buildPod(sandbox.Spec{ID: id}, c.Limits(sandbox.Limits{}), created)
		pod.Status.Phase, pod.Status.PodIP = phase, "10.0.0.1"
		sec, _ := c.buildSecret(sandbox.Spec{ID: id}, "k", "t", []byte("c"), []byte("k"))
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	mk("sess-expired-0001", "gw-b", now.Add(-13*time.Hour), corev1.PodRunning)
	mk("sess-failed-00001", "gw-b", now, corev1.PodFailed)
	mk("sess-alive-000001", "gw-b", now, corev1.PodRunning)
	mk("sess-dead-0000001", "gw-dead", now, corev1.PodRunning)
	mk("sess-mine-0000001", "gw-a", now, corev1.PodRunning)
	orphanSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: PodName("sess-nopod-000001"), Labels: cfg.labels("sess-nopod-000001", ""),
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, orphanSecret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := func() []string {
		l, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		var out []string
		for _, p := range l.Items {
			out = append(out, p.Labels[LabelSession])
		}
		sort.Strings(out)
		return out
	}
	if err := rt.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"sess-alive-000001", "sess-dead-0000001", "sess-mine-0000001"}
	if got := names(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("after reconcile: %v, want %v", got, want)
	}
	if _, err := cs.CoreV1().Secrets(ns).Get(ctx, orphanSecret.Name, metav1.GetOptions{}); err == nil {
		t.Fatal("a secret without its pod was kept")
	}
	// The dead gateway's and this gateway's old pods are adoptable, the
	// live one's not; after OrphanGrace nobody adopted them: deleted.
	list, err := rt.Adoptable(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "sess-dead-0000001" || list[1].ID != "sess-mine-0000001" || list[0].PodIP != "10.0.0.1" {
		t.Fatalf("adoptable %+v %v", list, err)
	}
	if _, _, err := rt.AdoptSession(ctx, "sess-alive-000001"); !errors.Is(err, ErrNotAdoptable) {
		t.Fatalf("adopting a live gateway's session: %v", err)
	}
	rt.cfg.OrphanGrace = 0
	if err := rt.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := names(); strings.Join(got, " ") != "sess-alive-000001" {
		t.Fatalf("after the grace: %v", got)
	}
	if p, s := count(t, cs); p != 1 || s != 1 {
		t.Fatalf("left %d pods, %d secrets", p, s)
	}
}

// TestLeaseJudgedOnOwnClock: whether a gateway's Lease is alive is
// decided on the judging gateway's clock alone: a renewTime written by a
// clock an hour ahead or an hour behind counts as a renewal when it is
// first seen and when it changes, and the Lease lapses its duration after
// the judge last saw it change, never earlier; a new holder on the same
// Lease is a renewal too.
func TestLeaseJudgedOnOwnClock(t *testing.T) {
	r := &Runtime{leaseSeen: map[string]leaseSighting{}}
	secs := int32(10)
	lease := func(holder string, renewed time.Time) *coordv1.Lease {
		rt := metav1.NewMicroTime(renewed)
		return &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeasePrefix + "a"},
			Spec: coordv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &rt, LeaseDurationSeconds: &secs}}
	}
	now := time.Now()
	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		r.leaseSeen = map[string]leaseSighting{}
		owner := now.Add(skew)
		steps := []struct {
			l     *coordv1.Lease
			at    time.Duration // the judge's clock, from now
			alive bool
		}{
			{lease("a", owner), 0, true},                                   // first seen
			{lease("a", owner), 9 * time.Second, true},                     // within its duration
			{lease("a", owner.Add(3*time.Second)), 12 * time.Second, true}, // renewed
			{lease("a", owner.Add(3*time.Second)), 21 * time.Second, true},
			{lease("a", owner.Add(3*time.Second)), 22 * time.Second, false}, // 10 s since the judge saw it change
			{lease("b", owner.Add(3*time.Second)), 23 * time.Second, true},  // a new holder
		}
		for i, st := range steps {
			if _, alive := r.leaseAlive(st.l, now.Add(st.at)); alive != st.alive {
				t.Fatalf("owner's clock %v off, step %d: alive %v, want %v", skew, i, alive, st.alive)
			}
		}
	}
}
