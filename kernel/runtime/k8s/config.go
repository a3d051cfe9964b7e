package k8s

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Labels and annotations on every pod and Secret the runtime makes. Any
// gateway of the namespace finds sessions through them.
const (
	LabelName      = "app.kubernetes.io/name"      // glassroom
	LabelComponent = "app.kubernetes.io/component" // kernel
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelSession   = "glassroom.io/session"
	LabelInstance  = "glassroom.io/instance" // the gateway that owns the session now
	LabelTenant    = "glassroom.io/tenant"

	AnnotationLimits  = "glassroom.io/limits"     // sandbox.Limits as JSON
	AnnotationExpires = "glassroom.io/expires-at" // RFC 3339
	AnnotationUID     = "glassroom.io/uid"
	// AnnotationURL, on a gateway's Lease, is its AdvertiseURL.
	AnnotationURL = "glassroom.io/url"

	// LeasePrefix names each gateway's Lease: glassroom-gateway-<instance>.
	LeasePrefix = "glassroom-gateway-"
)

// Keys of a session's Secret.
const (
	SecretKernelKey = "kernel.json" // the kernel's connection file (its HMAC key)
	SecretAgentKey  = "agent-token" // the agent's bearer token
	// The agent's TLS certificate and key (PEM), the session's own: the
	// gateway trusts only that certificate for that pod.
	SecretAgentCert   = "agent-tls.crt"
	SecretAgentTLSKey = "agent-tls.key"
	// The kernel container's /etc/passwd and /etc/group
	// (sandbox.IdentityFiles): the session's uid is its user.
	SecretPasswd = "passwd"
	SecretGroup  = "group"
)

// Config configures the Kubernetes runtime. Zero fields take defaults.
type Config struct {
	// Common holds what every runtime shares. StateDir is not used (no
	// host directory); UIDBase (1,000,000) is the first uid of the range
	// session uids are drawn from (see UIDRange).
	sandbox.Common
	// Namespace holds the kernel pods, their Secrets and the gateways'
	// Leases (default "default"; in a cluster, the gateway's own).
	Namespace string
	// Image is the kernel image (glassroom/python-kernel:latest).
	Image string
	// AgentImage runs the pod agent, `glassroom pod-agent`: the gateway's
	// own image (glassroom/gateway:latest).
	AgentImage string
	// ImagePullPolicy of both images (IfNotPresent).
	ImagePullPolicy string
	// Instance names this gateway replica in labels and its Lease
	// (default "default"; in a cluster, the pod's name).
	Instance string
	// RuntimeClassName runs kernel pods under that RuntimeClass (gVisor,
	// Kata); "" uses the node's default.
	RuntimeClassName string
	// SeccompLocalhostProfile, when set, is a profile file on the nodes
	// (relative to the kubelet's seccomp dir); else RuntimeDefault.
	SeccompLocalhostProfile string
	// WorkspaceMedium is the workspace emptyDir's medium: "" (node disk,
	// sizeLimit enforced by eviction) or "Memory" (tmpfs, a hard limit,
	// charged to the pod's memory).
	WorkspaceMedium string
	// UIDRange is how many uids session uids are drawn from (1<<30): a
	// session's uid is UIDBase + hash(id) mod UIDRange, the same in every
	// gateway.
	UIDRange int
	// AgentPort is the agent's TCP port (8790).
	AgentPort int
	// AgentCPU and AgentMemoryMB are the agent container's resources
	// (0.25 CPU, 128 MB).
	AgentCPU      float64
	AgentMemoryMB int
	// TmpMB sizes the kernel's memory-backed /tmp (256); ShmMB /dev/shm (64).
	TmpMB int
	ShmMB int
	// CallTimeout bounds each API call (10 s).
	CallTimeout time.Duration
	// DeleteGrace is the pods' termination grace period (5 s).
	DeleteGrace time.Duration
	// ReconcileInterval is how often orphans are removed (10 s).
	ReconcileInterval time.Duration
	// LeaseDuration is how long a gateway that stopped renewing its Lease
	// is still alive (10 s); after it, its sessions are adoptable, and any
	// gateway adopts one as soon as it is asked for it: this bounds the
	// failover of a killed replica.
	LeaseDuration time.Duration
	// RenewInterval is how often this gateway's Lease is renewed (a third
	// of LeaseDuration).
	RenewInterval time.Duration
	// AdvertiseURL is where other replicas reach this gateway's API
	// (http://<pod IP>:8080), written on its Lease: a replica asked for a
	// session this one serves forwards the request there. "" advertises
	// nothing (one replica).
	AdvertiseURL string
	// CPURequestRatio is the share of a container's CPU limit its pod
	// requests (1: requests equal limits, Guaranteed QoS). Below 1 the
	// scheduler packs more sessions on a node than their limits add up to
	// (idle kernels use almost none); memory is always requested in full.
	CPURequestRatio float64
	// OrphanGrace is how long sessions of a dead gateway wait to be
	// adopted before reconcile deletes them (10 min).
	OrphanGrace time.Duration
	// MaxLifetime is recorded as each pod's expiry; reconcile deletes pods
	// past it (12 h, as the session layer's default). Each pod also gets
	// MaxLifetime + DeadlineMargin (1 min) as its activeDeadlineSeconds,
	// so the kubelet ends it then even if no gateway ever runs again; the
	// margin lets the gateway end the session first, with its reason.
	MaxLifetime    time.Duration
	DeadlineMargin time.Duration
	// Python is the interpreter in the kernel image (/usr/bin/python3).
	Python string
	// Tini is the init in the kernel image (/usr/bin/tini).
	Tini string
}

func (c Config) withDefaults() Config {
	c.Common = c.Common.WithDefaults("/run/glassroom/k8s", 1000000)
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Namespace, "default")
	def(&c.Image, "glassroom/python-kernel:latest")
	def(&c.AgentImage, "glassroom/gateway:latest")
	def(&c.ImagePullPolicy, "IfNotPresent")
	def(&c.Instance, "default")
	def(&c.Python, "/usr/bin/python3")
	def(&c.Tini, "/usr/bin/tini")
	if c.UIDRange == 0 {
		c.UIDRange = 1 << 30
	}
	if c.AgentPort == 0 {
		c.AgentPort = 8790
	}
	if c.AgentCPU == 0 {
		c.AgentCPU = 0.25
	}
	if c.AgentMemoryMB == 0 {
		c.AgentMemoryMB = 128
	}
	if c.TmpMB == 0 {
		c.TmpMB = 256
	}
	if c.ShmMB == 0 {
		c.ShmMB = 64
	}
	dur := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	dur(&c.CallTimeout, 10*time.Second)
	dur(&c.DeleteGrace, 5*time.Second)
	dur(&c.ReconcileInterval, 10*time.Second)
	dur(&c.LeaseDuration, 10*time.Second)
	dur(&c.RenewInterval, c.LeaseDuration/3)
	if c.CPURequestRatio == 0 {
		c.CPURequestRatio = 1
	}
	dur(&c.OrphanGrace, 10*time.Minute)
	dur(&c.MaxLifetime, 12*time.Hour)
	dur(&c.DeadlineMargin, time.Minute)
	return c
}

// namePattern is a DNS label (namespace, instance).
var namePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := c.Common.Validate(); err != nil {
		return fmt.Errorf("k8s: %w", err)
	}
	if !namePattern.MatchString(c.Namespace) {
		return fmt.Errorf("k8s: config: namespace %q is not a DNS label", c.Namespace)
	}
	if !namePattern.MatchString(c.Instance) || len(LeasePrefix+c.Instance) > 253 {
		return fmt.Errorf("k8s: config: instance %q must be a DNS label", c.Instance)
	}
	if c.RuntimeClassName != "" && !namePattern.MatchString(c.RuntimeClassName) {
		return fmt.Errorf("k8s: config: runtime class %q", c.RuntimeClassName)
	}
	switch c.WorkspaceMedium {
	case "", "Memory":
	default:
		return fmt.Errorf("k8s: config: workspace medium %q (want \"\" or Memory)", c.WorkspaceMedium)
	}
	switch c.ImagePullPolicy {
	case "Always", "IfNotPresent", "Never":
	default:
		return fmt.Errorf("k8s: config: image pull policy %q", c.ImagePullPolicy)
	}
	if c.UIDRange < 1 || int64(c.UIDBase)+int64(c.UIDRange) > 1<<31-2 {
		return fmt.Errorf("k8s: config: uid range %d+%d", c.UIDBase, c.UIDRange)
	}
	if c.AgentPort < 1024 || c.AgentPort > 65535 {
		return errors.New("k8s: config: the agent's port must be above 1023")
	}
	if c.AgentCPU < 0 || c.AgentMemoryMB < 16 || c.TmpMB < 1 || c.ShmMB < 1 {
		return errors.New("k8s: config: agent or tmpfs resources too small")
	}
	if c.CallTimeout < 0 || c.DeleteGrace < 0 || c.ReconcileInterval <= 0 || c.RenewInterval <= 0 || c.LeaseDuration < time.Second ||
		2*c.RenewInterval > c.LeaseDuration || c.LeaseDuration%time.Second != 0 || c.OrphanGrace < 0 || c.MaxLifetime <= 0 || c.DeadlineMargin < 0 {
		return errors.New("k8s: config: bad durations (the lease lasts whole seconds, at least one, and at least two renewal intervals)")
	}
	if c.CPURequestRatio < 0 || c.CPURequestRatio > 1 {
		return fmt.Errorf("k8s: config: CPU request ratio %g (want 0 to 1)", c.CPURequestRatio)
	}
	if c.AdvertiseURL != "" && !validAdvertiseURL(c.AdvertiseURL) {
		return fmt.Errorf("k8s: config: advertise URL %q (want http(s)://host:port)", c.AdvertiseURL)
	}
	return nil
}

// validAdvertiseURL reports whether s is an address a replica may
// advertise: http(s)://host[:port], nothing more (no user, path, query or
// fragment).
func validAdvertiseURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		(u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == "" && u.Opaque == ""
}
