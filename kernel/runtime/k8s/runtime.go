package k8s

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/workspace"
	"github.com/glassroom/glassroom/workspace/remote"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Runtime starts each session's kernel in its own pod. It is safe for
// concurrent use.
type Runtime struct {
	cfg Config
	log zerolog.Logger
	cs  kubernetes.Interface

	mu          sync.Mutex
	live        sandbox.LiveSet          // sessions with a sandbox here, including ones starting
	orphanSince map[string]time.Time     // reconcile: when a pod was first seen without a live gateway
	leaseSeen   map[string]leaseSighting // by Lease name: when this gateway first saw its renewTime

	// The Lease's renewal: from New to Close (or ReleaseLease), so that it
	// runs while the gateway restores and adopts, before Run.
	stopRenewal context.CancelFunc
	renewalDone chan struct{}
	stopOnce    sync.Once
}

// NewClientset connects to the cluster: in-cluster (the pod's service
// account) when kubeconfig is "" and the gateway runs in a pod, else the
// kubeconfig file (KUBECONFIG's rules when kubeconfig is "").
func NewClientset(kubeconfig string) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		cfg, err = rest.InClusterConfig()
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = kubeconfig
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: k8s: cluster config: %w", sandbox.ErrUnavailable, err)
	}
	cfg.UserAgent = "glassroom"
	// client-go's default (5 requests/s, bursts of 10) throttles a replica
	// that adopts a dead replica's sessions, each a few calls: the API
	// server's own priority and fairness protects it instead.
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: k8s: client: %w", sandbox.ErrUnavailable, err)
	}
	return cs, nil
}

// InClusterNamespace returns the namespace of the pod the gateway runs
// in, or "" outside a cluster.
func InClusterNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return string(b)
}

// New returns a runtime over cs. It checks that the namespace can be
// read, takes this gateway's Lease and removes orphans. The caller must
// Close it, and should Run it.
func New(ctx context.Context, cfg Config, cs kubernetes.Interface, log zerolog.Logger) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r := &Runtime{cfg: cfg, log: log.With().Str("runtime", "k8s").Logger(), cs: cs, orphanSince: map[string]time.Time{}, leaseSeen: map[string]leaseSighting{}}
	cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	if _, err := cs.CoreV1().Pods(cfg.Namespace).List(cctx, metav1.ListOptions{LabelSelector: selector(), Limit: 1}); err != nil {
		return nil, fmt.Errorf("%w: k8s: cannot list pods in namespace %s: %w", sandbox.ErrUnavailable, cfg.Namespace, err)
	}
	if err := r.renewLease(ctx); err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stopRenewal, r.renewalDone = stop, make(chan struct{})
	go func() { // renews the Lease until Close or ReleaseLease; they wait for it
		defer close(r.renewalDone)
		_ = sandbox.Every(rctx, cfg.RenewInterval, func(ctx context.Context) {
			if err := r.renewLease(ctx); err != nil {
				r.log.Warn().Err(err).Msg("lease renewal failed")
			}
		})
	}()
	if err := r.Reconcile(ctx); err != nil {
		r.log.Warn().Err(err).Msg("reconcile failed")
	}
	return r, nil
}

// endRenewal stops renewing the Lease and waits for the renewal loop; it
// may be called more than once.
func (r *Runtime) endRenewal() {
	r.stopOnce.Do(func() {
		r.stopRenewal()
		<-r.renewalDone
	})
}

// Name returns "k8s".
func (r *Runtime) Name() string { return "k8s" }

// Instance returns this gateway's name in labels and its Lease.
func (r *Runtime) Instance() string { return r.cfg.Instance }

// Close stops renewing this gateway's Lease (it expires after
// LeaseDuration, unless ReleaseLease deleted it) and waits for the
// renewal loop. Each sandbox holds its own connections to its agent and
// closes them; sandboxes must be closed (or detached) first. Close may be
// called more than once.
func (r *Runtime) Close() error {
	r.endRenewal()
	return nil
}

// Run reconciles every ReconcileInterval until ctx ends. The Lease is
// renewed by a loop of its own, from New to Close: a slow reconcile, or a
// long restore before Run, never delays a renewal.
func (r *Runtime) Run(ctx context.Context) error {
	return sandbox.Every(ctx, r.cfg.ReconcileInterval, func(ctx context.Context) {
		if err := r.Reconcile(ctx); err != nil {
			r.log.Warn().Err(err).Msg("reconcile failed")
		}
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("k8s: crypto/rand failed: %v", err))
	}
	return hex.EncodeToString(b)
}

func (r *Runtime) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), r.cfg.CallTimeout)
}

// Start creates the session's Secret and pod, waits until the pod is
// ready and the kernel answers on its ports. On failure, and on a panic,
// both are deleted. The caller must Close the sandbox.
func (r *Runtime) Start(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.EgressSocket != "" {
		return nil, &sandbox.SpecError{Reason: "network allowlists are not available on the k8s runtime"}
	}
	if len(spec.Volumes) > 0 {
		return nil, &sandbox.SpecError{Reason: "volumes are not available on the k8s runtime"}
	}
	if len(spec.ID) > 63 {
		return nil, &sandbox.SpecError{Reason: "session id longer than 63 characters (a label value)"}
	}
	if err := r.live.Claim(spec.ID); err != nil {
		return nil, err
	}
	limits := r.cfg.Limits(spec.Limits)
	b := sandbox.NewBase(sandbox.BaseConfig{ID: spec.ID, Limits: limits, StartTimeout: r.cfg.StartTimeout})
	defer b.CloseOnFailure(ctx, &err)
	b.OnClose("forget session", func() error { r.live.Forget(spec.ID); return nil })
	uid := int(r.cfg.sessionUID(spec.ID))
	b.SetOwner(uid, uid)
	key := kernel.NewIPCConnection("").Key
	cert, tlsKey, err := NewAgentCert(spec.ID, r.cfg.MaxLifetime+24*time.Hour)
	if err != nil {
		return nil, err
	}
	d := r.newDriver(spec.ID, limits, key, randomHex(32), cert)
	d.epoch.Store(1) // the pod's first owner (AnnotationEpoch)
	b.Use(nil, d)

	secret, err := r.cfg.buildSecret(spec, key, d.token, cert, tlsKey)
	if err != nil {
		return nil, err
	}
	pod, err := r.cfg.buildPod(spec, limits, time.Now())
	if err != nil {
		return nil, err
	}
	cctx, cancel := r.callCtx(ctx)
	secret, err = r.cs.CoreV1().Secrets(r.cfg.Namespace).Create(cctx, secret, metav1.CreateOptions{})
	cancel()
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			d.keep() // another gateway's: never delete it
			return nil, &sandbox.SpecError{Reason: "session " + spec.ID + " already has a sandbox"}
		}
		return nil, fmt.Errorf("%w: k8s: create secret: %w", sandbox.ErrUnavailable, err)
	}
	cctx, cancel = r.callCtx(ctx)
	pod, err = r.cs.CoreV1().Pods(r.cfg.Namespace).Create(cctx, pod, metav1.CreateOptions{})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: k8s: create pod: %w", sandbox.ErrUnavailable, err)
	}
	r.ownSecret(ctx, secret, pod)
	d.startWatch(pod)
	if err := d.waitPodReady(ctx); err != nil {
		return nil, err
	}
	if err := b.Launch(ctx); err != nil {
		return nil, err
	}
	return newPodSandbox(b, d), nil
}

// ownSecret makes the pod the Secret's owner, so the cluster's garbage
// collector removes the Secret with the pod whatever happens to gateways.
func (r *Runtime) ownSecret(ctx context.Context, secret *corev1.Secret, pod *corev1.Pod) {
	t := true
	secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, BlockOwnerDeletion: &t}}
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	if _, err := r.cs.CoreV1().Secrets(r.cfg.Namespace).Update(cctx, secret, metav1.UpdateOptions{}); err != nil {
		r.log.Warn().Err(err).Str("secret", secret.Name).Msg("cannot give the secret to its pod; reconcile removes it later")
	}
}

// podSandbox is a session's pod as a sandbox.Sandbox; its workspace is
// reached through the pod's agent (sandbox.WorkspaceOpener). The pod
// outlives the gateway: it is a sandbox.Persistent, whose Detach leaves the
// pod running for the next gateway to adopt.
//
// Its contexts (sandbox.ContextStarter) and commands
// (sandbox.CommandRunner) are processes the pod's supervisor starts
// beside the first kernel (contexts.go, commands.go).
type podSandbox struct {
	sandbox.Durable
	d    *driver
	ctxs *sandbox.Contexts
	cmds sandbox.CommandSet
}

// newPodSandbox wraps the Base of a started or adopted pod.
func newPodSandbox(b *sandbox.Base, d *driver) *podSandbox {
	return &podSandbox{Durable: sandbox.Durable{Base: b}, d: d, ctxs: sandbox.NewContexts(b)}
}

// Close ends the sandbox's commands and contexts, then the pod.
func (s *podSandbox) Close(ctx context.Context) error {
	return errors.Join(s.cmds.Close(ctx), s.ctxs.Close(ctx), s.Durable.Close(ctx))
}

// Detach implements sandbox.Persistent: the commands and contexts end
// (their streams are this gateway's), the pod and its first kernel run
// on for the next gateway.
func (s *podSandbox) Detach(ctx context.Context) error {
	return errors.Join(s.cmds.Close(ctx), s.ctxs.Close(ctx), s.Durable.Detach(ctx))
}

// Installed implements sandbox.KernelLister: every kernel of the kernel
// registry, which the kernel image is built with (images/python/build.sh
// installs each); a kernel missing from a custom image fails its start
// with the launcher's reason.
func (r *Runtime) Installed() []sandbox.KernelSpec { return sandbox.Kernels() }

// RecordTenant implements sandbox.TenantRecorder: it labels the pod with
// the session's tenant (a pooled pod was started without one), so that a
// gateway adopting the session knows whose it is.
func (s *podSandbox) RecordTenant(ctx context.Context, tenant string) error {
	if !sandbox.TenantPattern.MatchString(tenant) {
		return &sandbox.SpecError{Reason: fmt.Sprintf("tenant %q", tenant)}
	}
	r := s.d.r
	for attempt := 0; ; attempt++ {
		cctx, cancel := r.callCtx(ctx)
		pod, err := r.cs.CoreV1().Pods(r.cfg.Namespace).Get(cctx, s.d.name, metav1.GetOptions{})
		if err == nil {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[LabelTenant] = tenant
			_, err = r.cs.CoreV1().Pods(r.cfg.Namespace).Update(cctx, pod, metav1.UpdateOptions{})
		}
		cancel()
		if err == nil || !apierrors.IsConflict(err) || attempt == 2 {
			if err != nil {
				return fmt.Errorf("k8s: record tenant of %s: %w", s.d.id, err)
			}
			return nil
		}
	}
}

// StateDir returns the Common StateDir: unused by the runtime itself, it
// is where a gateway keeps its session store, if anywhere ("").
func (r *Runtime) StateDir() string { return r.cfg.StateDir }

// OpenWorkspace implements sandbox.WorkspaceOpener: a client of the
// pod's agent. The caller closes both (the tracker's Close does nothing).
func (s *podSandbox) OpenWorkspace(context.Context) (workspace.FS, workspace.Tracker, error) {
	c, err := remote.NewClient(remote.ClientConfig{BaseURL: s.d.agentBase(), Token: s.d.token, CallTimeout: s.d.r.cfg.CallTimeout * 3,
		Transport: epochTransport{base: newAgentTransport(s.d.tls), d: s.d}})
	if err != nil {
		return nil, nil, fmt.Errorf("k8s: workspace: %w", err)
	}
	return c, c.Tracker(), nil
}

var errAgentUnreachable = errors.New("k8s: the pod agent is unreachable")

// Interface guards: the optional capabilities of the Kubernetes runtime and
// its sandboxes (a *podSandbox: Persistent, with a workspace reached
// through the pod's agent; a Freezer through the pod's supervisor, which
// stops every process of the kernel container; contexts and commands
// through the supervisor too), exercised by runtimetest.Capabilities.
var (
	_ sandbox.StateDirHolder  = (*Runtime)(nil)
	_ sandbox.Adopter         = (*Runtime)(nil)
	_ sandbox.OrphanFinder    = (*Runtime)(nil)
	_ sandbox.Locator         = (*Runtime)(nil)
	_ sandbox.PeerLister      = (*Runtime)(nil)
	_ sandbox.Persistent      = (*podSandbox)(nil)
	_ sandbox.WorkspaceOpener = (*podSandbox)(nil)
	_ sandbox.TenantRecorder  = (*podSandbox)(nil)
	_ sandbox.ContextStarter  = (*podSandbox)(nil)
	_ sandbox.CommandRunner   = (*podSandbox)(nil)
	_ sandbox.KernelLister    = (*Runtime)(nil)
	_ sandbox.Fenceable       = (*podSandbox)(nil)
	_ sandbox.Expiring        = (*podSandbox)(nil)
	_ sandbox.Connector       = (*driver)(nil) // the kernel is reached over TCP, not host sockets
	_ sandbox.DriverStater    = (*driver)(nil)
	_ sandbox.DriverDetacher  = (*driver)(nil)
	_ sandbox.DriverFreezer   = (*driver)(nil)
	_ sandbox.DriverUsage     = (*driver)(nil)
)

// SetEnd implements sandbox.Expiring: the pod's expiry annotation
// (AnnotationExpires) becomes end, within its maximum lifetime (the pod's
// activeDeadlineSeconds, which cannot grow); a zero end restores that
// maximum. An adopting gateway gives the session what is left of it, and
// reconcile deletes the pod once it is past it and no gateway holds it.
func (s *podSandbox) SetEnd(end time.Time) error {
	r := s.d.r
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.CallTimeout)
	defer cancel()
	pods := r.cs.CoreV1().Pods(r.cfg.Namespace)
	pod, err := pods.Get(ctx, s.d.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("k8s: set end of %s: %w", s.d.name, err)
	}
	limit := pod.CreationTimestamp.Add(r.cfg.MaxLifetime)
	if end.IsZero() || end.After(limit) {
		end = limit
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		AnnotationExpires: end.UTC().Format(time.RFC3339)}}})
	if err != nil {
		return fmt.Errorf("k8s: set end of %s: %w", s.d.name, err)
	}
	if _, err := pods.Patch(ctx, s.d.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("k8s: set end of %s: %w", s.d.name, err)
	}
	return nil
}

// Fenced implements sandbox.Fenceable: closed once the pod's agent has
// refused this gateway's epoch (another gateway adopted the session).
func (s *podSandbox) Fenced() <-chan struct{} { return s.d.fenced }

// epochTransport adds the gateway's epoch to each request to the agent
// (the workspace client's), and notes a refusal of it.
type epochTransport struct {
	base *http.Transport
	d    *driver
}

func (t epochTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(EpochHeader, strconv.FormatInt(t.d.epoch.Load(), 10))
	resp, err := t.base.RoundTrip(req)
	if err == nil && isFenced(resp) {
		_ = t.d.checkFenced(errFenced)
	}
	return resp, err
}

// CloseIdleConnections lets the workspace client drop idle connections.
func (t epochTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }
