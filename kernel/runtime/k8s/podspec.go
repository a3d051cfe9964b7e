package k8s

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

//go:embed supervisor.py
var supervisor string

// supervisorArgs is where the supervisor's arguments begin in the kernel
// container's command: tini, --, python, -I, -B, -c, the supervisor.
const supervisorArgs = 7

// Paths inside a kernel pod (besides sandbox.WorkDir and sandbox.IPCDir).
const (
	secretDir  = "/run/glassroom/secret"  // kernel container: its connection file (read-only)
	controlDir = "/run/glassroom/control" // agent writes, kernel reads
	statusDir  = "/run/glassroom/status"  // kernel writes, agent reads
	agentDir   = "/run/glassroom/agent"   // agent container: its token (read-only)
	// ControlFile and StatusFile are the supervisor protocol's files,
	// SpawnSocket where the supervisor takes the agent's requests for
	// contexts and commands (supervisor.py).
	ControlFile = controlDir + "/kernel.json"
	StatusFile  = statusDir + "/kernel.json"
	SpawnSocket = statusDir + "/spawn.sock"
	// KernelSockets is the socket prefix of the first kernel's ipc
	// connection file: channel N's socket is KernelSockets-N.
	KernelSockets = sandbox.IPCDir + "/k"
	// AgentTokenFile is where the agent reads its token, AgentCertFile
	// and AgentKeyFile its TLS certificate and key.
	AgentTokenFile = agentDir + "/token"
	AgentCertFile  = agentDir + "/tls.crt"
	AgentKeyFile   = agentDir + "/tls.key"
)

// Container names.
const (
	KernelContainer = "kernel"
	AgentContainer  = "agent"
)

// PodName is the deterministic name of a session's pod and Secret: any
// gateway finds them from the session id alone.
func PodName(sessionID string) string { return "glassroom-" + sessionID }

// sessionUID is the session's uid: the same in every gateway.
func (c Config) sessionUID(id string) int64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return int64(c.UIDBase) + int64(h.Sum64()%uint64(c.UIDRange))
}

// SupervisorSettings is the supervisor's first argument (JSON); the
// first kernel's command (Argv) follows it as arguments of their own, each
// within the kernel's bound on one argument (128 KiB), which the whole
// would exceed for the java kernel. Paths are the pod's; a simulation
// rewrites them.
type SupervisorSettings struct {
	Argv      []string         `json:"-"`
	Secret    string           `json:"secret"`
	Conn      string           `json:"conn"`
	Control   string           `json:"control"`
	Status    string           `json:"status"`
	Spawn     string           `json:"spawn"`    // SpawnSocket
	Contexts  string           `json:"contexts"` // the contexts' ipc directories' parent
	Workdir   string           `json:"workdir"`
	Rlimits   map[string]int64 `json:"rlimits"`
	KillScope string           `json:"kill_scope"` // "all" in a pod
	// Scratch lists the directories emptied before each generation
	// starts: the kernel container's writable emptyDirs but the workspace
	// and the status directory (/tmp, /dev/shm, the ipc and contexts
	// directories). They
	// outlive a generation, and /tmp holds the kernel's start-up state
	// (IPYTHONDIR and the caches of sandbox.KernelEnv).
	Scratch []string `json:"scratch"`
}

// kernelConnection is the first kernel's connection file in the pod: ipc
// sockets at KernelSockets, which the agent relays, with the session's key.
func kernelConnection(key string) kernel.ConnectionInfo {
	info := kernel.NewIPCConnection(KernelSockets)
	info.Key = key
	return info
}

// labels returns the labels of a session's objects.
func (c Config) labels(id, tenant string) map[string]string {
	l := map[string]string{LabelName: "glassroom", LabelComponent: "kernel", LabelManagedBy: "glassroom",
		LabelSession: id, LabelInstance: c.Instance}
	if tenant != "" {
		l[LabelTenant] = tenant
	}
	return l
}

// buildSecret returns a session's Secret: the kernel's connection file
// (unix sockets in the pod's ipc directory: the agent relays its channels),
// the agent's token, and its TLS certificate and key.
func (c Config) buildSecret(spec sandbox.Spec, key, token string, cert, tlsKey []byte) (*corev1.Secret, error) {
	conn, err := json.Marshal(kernelConnection(key))
	if err != nil {
		return nil, fmt.Errorf("k8s: secret: %w", err)
	}
	immutable := true
	uid := int(c.sessionUID(spec.ID))
	identity := sandbox.IdentityFiles(uid, uid)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(spec.ID), Namespace: c.Namespace, Labels: c.labels(spec.ID, spec.Tenant)},
		Type:       corev1.SecretTypeOpaque,
		Immutable:  &immutable,
		Data: map[string][]byte{SecretKernelKey: conn, SecretAgentKey: []byte(token),
			SecretAgentCert: cert, SecretAgentTLSKey: tlsKey,
			SecretPasswd: []byte(identity["passwd"]), SecretGroup: []byte(identity["group"])},
	}, nil
}

func mib(n int) resource.Quantity { return *resource.NewQuantity(int64(n)<<20, resource.BinarySI) }

func cpu(cores float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(cores*1000+0.5), resource.DecimalSI)
}

// buildPod returns a session's pod: the kernel container (tini, the
// supervisor, ipykernel) and the agent container (files and kernel
// control), both locked down, sharing only the workspace and the
// supervisor's control and status directories.
func (c Config) buildPod(spec sandbox.Spec, limits sandbox.Limits, now time.Time) (*corev1.Pod, error) {
	uid := c.sessionUID(spec.ID)
	settings := SupervisorSettings{
		Argv: sandbox.KernelArgv(c.Python, spec.Kernel, sandbox.ConnFile), Secret: secretDir + "/" + SecretKernelKey, Conn: sandbox.ConnFile,
		Control: ControlFile, Status: StatusFile, Spawn: SpawnSocket, Contexts: sandbox.ContextsDir,
		Workdir: sandbox.WorkDir, KillScope: "all",
		Scratch: []string{"/tmp", "/dev/shm", sandbox.IPCDir, sandbox.ContextsDir},
		Rlimits: map[string]int64{"RLIMIT_NPROC": int64(limits.Pids), "RLIMIT_NOFILE": int64(c.NoFile),
			"RLIMIT_FSIZE": int64(c.FileSizeMB) << 20, "RLIMIT_CORE": 0},
	}
	settingsJSON, err := json.Marshal(settings)
	if err != nil {
		return nil, fmt.Errorf("k8s: pod: %w", err)
	}
	limitsJSON, err := json.Marshal(limits)
	if err != nil {
		return nil, fmt.Errorf("k8s: pod: %w", err)
	}
	env := sandbox.KernelEnv(spec, limits)
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	envVars := make([]corev1.EnvVar, 0, len(names))
	for _, k := range names {
		envVars = append(envVars, corev1.EnvVar{Name: k, Value: env[k]})
	}
	kernelRes := corev1.ResourceList{corev1.ResourceCPU: cpu(limits.CPUs), corev1.ResourceMemory: mib(limits.MemoryMB)}
	agentRes := corev1.ResourceList{corev1.ResourceCPU: cpu(c.AgentCPU), corev1.ResourceMemory: mib(c.AgentMemoryMB)}
	// Requests: the limits, but CPU scaled by CPURequestRatio (at least a
	// millicore, so that a ratio never turns into "no request").
	kernelReq, agentReq := kernelRes, agentRes
	if c.CPURequestRatio < 1 {
		kernelReq = corev1.ResourceList{corev1.ResourceCPU: cpu(max(limits.CPUs*c.CPURequestRatio, 0.001)), corev1.ResourceMemory: mib(limits.MemoryMB)}
		agentReq = corev1.ResourceList{corev1.ResourceCPU: cpu(max(c.AgentCPU*c.CPURequestRatio, 0.001)), corev1.ResourceMemory: mib(c.AgentMemoryMB)}
	}
	f, t := false, true
	grace := int64(c.DeleteGrace / time.Second)
	// The kubelet ends the pod at its deadline whether or not a gateway
	// runs: no session outlives its maximum lifetime.
	activeDeadline := int64((c.MaxLifetime + c.DeadlineMargin + time.Second - 1) / time.Second)
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	if c.SeccompLocalhostProfile != "" {
		p := c.SeccompLocalhostProfile
		seccomp = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &p}
	}
	// Each container gets the whole hardening, not only the pod defaults.
	hardened := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{
			RunAsNonRoot: &t, RunAsUser: &uid, RunAsGroup: &uid,
			AllowPrivilegeEscalation: &f, Privileged: &f, ReadOnlyRootFilesystem: &t,
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: seccomp,
		}
	}
	memDir := func(name string, mb int) corev1.Volume {
		q := mib(mb)
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &q}}}
	}
	wsSize := mib(limits.WorkspaceMB)
	secretMode := int32(0o440)
	secretVol := func(name string, keyPaths ...string) corev1.Volume {
		var items []corev1.KeyToPath
		for i := 0; i+1 < len(keyPaths); i += 2 {
			items = append(items, corev1.KeyToPath{Key: keyPaths[i], Path: keyPaths[i+1]})
		}
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: PodName(spec.ID), DefaultMode: &secretMode, Items: items}}}
	}
	var runtimeClass *string
	if c.RuntimeClassName != "" {
		rc := c.RuntimeClassName
		runtimeClass = &rc
	}
	fsPolicy := corev1.FSGroupChangeOnRootMismatch
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: PodName(spec.ID), Namespace: c.Namespace, Labels: c.labels(spec.ID, spec.Tenant),
			Annotations: map[string]string{
				AnnotationLimits:  string(limitsJSON),
				AnnotationExpires: now.Add(c.MaxLifetime).UTC().Format(time.RFC3339),
				AnnotationUID:     strconv.FormatInt(uid, 10),
				AnnotationEpoch:   "1", // its first owner's (fence.go)
			},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyAlways,
			AutomountServiceAccountToken:  &f,
			EnableServiceLinks:            &f,
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			ShareProcessNamespace:         &f,
			Hostname:                      "glassroom",
			RuntimeClassName:              runtimeClass,
			TerminationGracePeriodSeconds: &grace,
			ActiveDeadlineSeconds:         &activeDeadline,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &t, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid, FSGroupChangePolicy: &fsPolicy,
				SeccompProfile: seccomp,
			},
			Containers: []corev1.Container{
				{
					Name:            KernelContainer,
					Image:           c.Image,
					ImagePullPolicy: corev1.PullPolicy(c.ImagePullPolicy),
					Command:         append([]string{c.Tini, "--", c.Python, "-I", "-B", "-c", supervisor, string(settingsJSON)}, settings.Argv...),
					WorkingDir:      sandbox.WorkDir,
					Env:             envVars,
					Resources:       corev1.ResourceRequirements{Limits: kernelRes, Requests: kernelReq},
					SecurityContext: hardened(),
					// No port and no readiness probe: the kernel listens on unix
					// sockets in the pod; the agent reports its generations.
					TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					VolumeMounts: []corev1.VolumeMount{
						{Name: "workspace", MountPath: sandbox.WorkDir},
						{Name: "workspace", MountPath: sandbox.WorkspaceAlias},
						{Name: "tmp", MountPath: "/tmp"},
						{Name: "shm", MountPath: "/dev/shm"},
						{Name: "ipc", MountPath: sandbox.IPCDir},
						{Name: "ctx", MountPath: sandbox.ContextsDir},
						{Name: "control", MountPath: controlDir, ReadOnly: true},
						{Name: "status", MountPath: statusDir},
						{Name: "kernel-secret", MountPath: secretDir, ReadOnly: true},
						{Name: "identity", MountPath: "/etc/passwd", SubPath: SecretPasswd, ReadOnly: true},
						{Name: "identity", MountPath: "/etc/group", SubPath: SecretGroup, ReadOnly: true},
					},
				},
				{
					Name:            AgentContainer,
					Image:           c.AgentImage,
					ImagePullPolicy: corev1.PullPolicy(c.ImagePullPolicy),
					Command: []string{"/glassroom", "pod-agent", "--listen", ":" + strconv.Itoa(c.AgentPort),
						"--workspace", sandbox.WorkDir, "--token-file", AgentTokenFile,
						"--control", ControlFile, "--status", StatusFile,
						"--quota-mb", strconv.Itoa(limits.WorkspaceMB),
						"--tls-cert", AgentCertFile, "--tls-key", AgentKeyFile,
						"--kernel-ipc", KernelSockets, "--contexts", sandbox.ContextsDir, "--spawn", SpawnSocket, "--fence", FenceFile},
					Ports:           []corev1.ContainerPort{{Name: "agent", ContainerPort: int32(c.AgentPort), Protocol: corev1.ProtocolTCP}},
					Resources:       corev1.ResourceRequirements{Limits: agentRes, Requests: agentReq},
					SecurityContext: hardened(),
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(int32(c.AgentPort)), Scheme: corev1.URISchemeHTTPS}},
						PeriodSeconds: 1, FailureThreshold: 3, SuccessThreshold: 1, TimeoutSeconds: 1,
					},
					TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					VolumeMounts: []corev1.VolumeMount{
						{Name: "workspace", MountPath: sandbox.WorkDir},
						{Name: "ipc", MountPath: sandbox.IPCDir, ReadOnly: true},
						{Name: "ctx", MountPath: sandbox.ContextsDir, ReadOnly: true},
						{Name: "control", MountPath: controlDir},
						{Name: "status", MountPath: statusDir, ReadOnly: true},
						{Name: "agent-secret", MountPath: agentDir, ReadOnly: true},
						// The agent's own /tmp: its files watches' sync marks
						// (workspace.DirWatch.Sync), apart from the kernel's.
						{Name: "agent-tmp", MountPath: "/tmp"},
					},
				},
			},
			Volumes: []corev1.Volume{
				{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMedium(c.WorkspaceMedium), SizeLimit: &wsSize}}},
				memDir("tmp", c.TmpMB),
				memDir("shm", c.ShmMB),
				memDir("ipc", 1),
				memDir("ctx", 1),
				memDir("control", 1),
				memDir("status", 1),
				memDir("agent-tmp", 1),
				secretVol("kernel-secret", SecretKernelKey, SecretKernelKey),
				secretVol("identity", SecretPasswd, SecretPasswd, SecretGroup, SecretGroup),
				secretVol("agent-secret", SecretAgentKey, "token", SecretAgentCert, "tls.crt", SecretAgentTLSKey, "tls.key"),
			},
		},
	}
	return pod, nil
}
