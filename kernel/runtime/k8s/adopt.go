package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Adoptable is a session whose pod runs without a live gateway: what a
// gateway needs to take it over and re-dial its kernel.
type Adoptable struct {
	ID      string
	Tenant  string         // Spec.Tenant when it was started
	Owner   string         // the gateway instance that had it
	Created time.Time      // the pod's creation
	Expires time.Time      // its maximum lifetime (zero if unknown)
	Limits  sandbox.Limits // the effective limits it was started with
	// PodIP is the pod's address, where its agent listens.
	PodIP string
	// Connection is the kernel's connection file in its pod (its sockets
	// there, the session's key). The gateway reaches it only through the
	// pod's agent (an adopted sandbox's Connection is its channel
	// relay's).
	Connection kernel.ConnectionInfo

	token string // the pod agent's
	cert  []byte // the agent's certificate (PEM)
	epoch int64  // its owner's epoch (AnnotationEpoch; 0 on a pod from before fencing)
}

// Errors of Adopt.
var (
	// ErrNotAdoptable: the session has a live gateway, or no pod.
	ErrNotAdoptable = errors.New("k8s: session not adoptable")
	// ErrAdoptConflict: another gateway adopted it first.
	ErrAdoptConflict = errors.New("k8s: session adopted by another gateway")
)

// Adoptable lists the sessions no live gateway serves: pods of gateways
// whose Lease expired, and this gateway's own pods that it does not hold
// (a previous run of the same instance). Pods being deleted or that ended
// are left out.
func (r *Runtime) Adoptable(ctx context.Context) ([]Adoptable, error) {
	alive, err := r.aliveGateways(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := r.callCtx(ctx)
	pods, err := r.cs.CoreV1().Pods(r.cfg.Namespace).List(cctx, metav1.ListOptions{LabelSelector: selector()})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("k8s: adoptable: list pods: %w", err)
	}
	var out []Adoptable
	for i := range pods.Items {
		pod := &pods.Items[i]
		id := pod.Labels[LabelSession]
		if !sandbox.IDPattern.MatchString(id) || pod.Name != PodName(id) || r.live.Has(id) || !r.ownerless(pod, alive) || !adoptablePod(pod) {
			continue
		}
		a, err := r.describe(ctx, pod)
		if err != nil {
			r.log.Warn().Err(err).Str("pod", pod.Name).Msg("cannot describe an adoptable session")
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

func adoptablePod(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != ""
}

// describe reads what a session's pod and Secret say about it.
func (r *Runtime) describe(ctx context.Context, pod *corev1.Pod) (Adoptable, error) {
	a := Adoptable{ID: pod.Labels[LabelSession], Tenant: pod.Labels[LabelTenant], Owner: pod.Labels[LabelInstance], Created: pod.CreationTimestamp.Time,
		epoch: podEpoch(pod)}
	if t, err := time.Parse(time.RFC3339, pod.Annotations[AnnotationExpires]); err == nil {
		a.Expires = t
	}
	if err := json.Unmarshal([]byte(pod.Annotations[AnnotationLimits]), &a.Limits); err != nil {
		return a, fmt.Errorf("k8s: pod %s: limits annotation: %w", pod.Name, err)
	}
	sec, err := r.sessionSecret(ctx, pod.Name)
	if err != nil {
		return a, err
	}
	a.PodIP, a.Connection, a.token, a.cert = pod.Status.PodIP, sec.conn, sec.token, sec.cert
	return a, nil
}

// secrets are what a session's Secret holds for the gateway.
type secrets struct {
	conn  kernel.ConnectionInfo // the kernel's connection file in its pod
	key   string                // the kernel's HMAC key
	token string                // the agent's bearer token
	cert  []byte                // the agent's certificate (PEM)
}

// sessionSecret reads a session's Secret. A Secret without the agent's
// certificate (a pod from before the channels went through the agent)
// cannot be adopted.
func (r *Runtime) sessionSecret(ctx context.Context, name string) (secrets, error) {
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	s, err := r.cs.CoreV1().Secrets(r.cfg.Namespace).Get(cctx, name, metav1.GetOptions{})
	if err != nil {
		return secrets{}, fmt.Errorf("k8s: secret %s: %w", name, err)
	}
	var conn kernel.ConnectionInfo
	if err := json.Unmarshal(s.Data[SecretKernelKey], &conn); err != nil || conn.Key == "" {
		return secrets{}, fmt.Errorf("k8s: secret %s: no kernel key", name)
	}
	out := secrets{conn: conn, key: conn.Key, token: string(s.Data[SecretAgentKey]), cert: s.Data[SecretAgentCert]}
	if out.token == "" {
		return secrets{}, fmt.Errorf("k8s: secret %s: no agent token", name)
	}
	if len(out.cert) == 0 {
		return secrets{}, fmt.Errorf("k8s: secret %s: no agent certificate", name)
	}
	return out, nil
}

// AdoptSession takes over session id from a dead gateway (or a previous run of
// this one): it relabels the pod with this instance (an update on the
// pod's resourceVersion: of two gateways adopting at once, one gets
// ErrAdoptConflict) and returns a sandbox attached to the running kernel,
// whose variables are intact. A kernel that is not running is returned
// as exited, for the caller to Restart. The caller must Close the sandbox
// (or Detach it).
func (r *Runtime) AdoptSession(ctx context.Context, id string) (_ sandbox.Sandbox, _ Adoptable, err error) {
	if !sandbox.IDPattern.MatchString(id) {
		return nil, Adoptable{}, &sandbox.SpecError{Reason: fmt.Sprintf("id %q", id)}
	}
	if err := r.live.Claim(id); err != nil {
		return nil, Adoptable{}, err
	}
	claimed := true
	defer func() {
		if claimed {
			r.live.Forget(id)
		}
	}()
	alive, err := r.aliveGateways(ctx)
	if err != nil {
		return nil, Adoptable{}, err
	}
	cctx, cancel := r.callCtx(ctx)
	pod, err := r.cs.CoreV1().Pods(r.cfg.Namespace).Get(cctx, PodName(id), metav1.GetOptions{})
	cancel()
	if apierrors.IsNotFound(err) {
		return nil, Adoptable{}, fmt.Errorf("%w: no pod for %s", ErrNotAdoptable, id)
	}
	if err != nil {
		return nil, Adoptable{}, fmt.Errorf("k8s: adopt %s: %w", id, err)
	}
	owner := pod.Labels[LabelInstance]
	if pod.Labels[LabelSession] != id || (owner != r.cfg.Instance && alive[owner]) || !adoptablePod(pod) {
		return nil, Adoptable{}, fmt.Errorf("%w: %s (owner %s)", ErrNotAdoptable, id, owner)
	}
	a, err := r.describe(ctx, pod)
	if err != nil {
		return nil, Adoptable{}, err
	}
	// The owner's label and a new epoch in one update: of two adopters one
	// wins, and the agent refuses every earlier owner from the winner's
	// first request on (fence.go).
	epoch := podEpoch(pod) + 1
	pod.Labels[LabelInstance] = r.cfg.Instance
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationEpoch] = strconv.FormatInt(epoch, 10)
	cctx, cancel = r.callCtx(ctx)
	pod, err = r.cs.CoreV1().Pods(r.cfg.Namespace).Update(cctx, pod, metav1.UpdateOptions{})
	cancel()
	if apierrors.IsConflict(err) {
		return nil, Adoptable{}, fmt.Errorf("%w: %s", ErrAdoptConflict, id)
	}
	if err != nil {
		return nil, Adoptable{}, fmt.Errorf("k8s: adopt %s: relabel: %w", id, err)
	}
	sec, err := r.sessionSecret(ctx, pod.Name)
	if err != nil {
		return nil, Adoptable{}, err
	}
	b := sandbox.NewBase(sandbox.BaseConfig{ID: id, Limits: a.Limits, StartTimeout: r.cfg.StartTimeout})
	b.OnClose("forget session", func() error { r.live.Forget(id); return nil })
	uid := int(r.cfg.sessionUID(id))
	b.SetOwner(uid, uid)
	d := r.newDriver(id, a.Limits, sec.key, sec.token, sec.cert)
	d.ip = pod.Status.PodIP
	d.epoch.Store(epoch)
	b.Use(nil, d)
	claimed = false // the sandbox owns the claim now
	defer func() {
		if err != nil {
			d.stop() // leave the pod for the next try
			r.live.Forget(id)
		}
	}()
	d.startWatch(pod)
	st, werr := d.agent().wait(ctx, 0, "ready", 0)
	if werr != nil {
		return nil, Adoptable{}, fmt.Errorf("k8s: adopt %s: %w", id, werr)
	}
	info, err := d.connection()
	if err != nil {
		return nil, Adoptable{}, err
	}
	inc := sandbox.NewIncarnation(info)
	d.mu.Lock()
	d.gen, d.inc, d.incGen = st.Gen, inc, st.Gen
	if st.State == "ready" {
		d.kernelCID = runningKernelID(pod)
	}
	d.mu.Unlock()
	if st.State == "ready" && st.Gen > 0 {
		d.waitExit(inc, st.Gen)
	} else {
		inc.Exit(fmt.Sprintf("the kernel was not running when adopted (generation %d: %q)", st.Gen, st.State))
	}
	b.Attach(inc, &process{d: d, gen: st.Gen, inc: inc})
	r.log.Info().Str("session", id).Str("from", a.Owner).Int64("generation", st.Gen).Msg("adopted session")
	return newPodSandbox(b, d), a, nil
}

// Orphans implements sandbox.OrphanFinder: the Adoptable sessions, each
// with its kernel's current generation (asked of its pod's agent) as the
// State's Incarnation. A session whose agent does not answer is left out
// (Reconcile removes it once OrphanGrace passes).
func (r *Runtime) Orphans(ctx context.Context) ([]sandbox.Orphan, error) {
	list, err := r.Adoptable(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sandbox.Orphan, 0, len(list))
	for _, a := range list {
		o, err := r.orphan(ctx, a)
		if err != nil {
			r.log.Warn().Err(err).Str("session", a.ID).Msg("orphaned session: its agent does not answer")
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

// orphan describes an adoptable session as an Orphan, its kernel's
// current generation (asked of its agent) as the State's Incarnation.
func (r *Runtime) orphan(ctx context.Context, a Adoptable) (sandbox.Orphan, error) {
	st, err := r.agentStatus(ctx, a)
	if err != nil {
		return sandbox.Orphan{}, err
	}
	uid := int(r.cfg.sessionUID(a.ID))
	return sandbox.Orphan{Tenant: a.Tenant, Created: a.Created, State: sandbox.State{
		ID: a.ID, UID: uid, GID: uid, Limits: a.Limits, Conn: a.Connection, Incarnation: strconv.FormatInt(st.Gen, 10)}}, nil
}

// Locate implements sandbox.Locator. The session's pod names its tenant
// and its owner; the owner's Lease says whether that gateway lives and
// where it serves (AnnotationURL). A running pod whose owner's Lease
// expired (or this instance's, not served here: a previous run) comes
// back as an Orphan, to adopt at once: a killed replica's sessions move as
// soon as a client asks for them. A pod being deleted, or one that is not
// running without a live owner, is ErrNotLocated.
func (r *Runtime) Locate(ctx context.Context, id, tenant string) (sandbox.Location, error) {
	if !sandbox.IDPattern.MatchString(id) || tenant == "" {
		return sandbox.Location{}, sandbox.ErrNotLocated
	}
	cctx, cancel := r.callCtx(ctx)
	pod, err := r.cs.CoreV1().Pods(r.cfg.Namespace).Get(cctx, PodName(id), metav1.GetOptions{})
	cancel()
	if apierrors.IsNotFound(err) {
		return sandbox.Location{}, fmt.Errorf("%w: %s", sandbox.ErrNotLocated, id)
	}
	if err != nil {
		return sandbox.Location{}, fmt.Errorf("k8s: locate %s: %w", id, err)
	}
	if pod.Labels[LabelSession] != id || pod.DeletionTimestamp != nil || pod.Labels[LabelTenant] != tenant {
		return sandbox.Location{}, fmt.Errorf("%w: %s", sandbox.ErrNotLocated, id)
	}
	loc := sandbox.Location{Tenant: tenant, Owner: pod.Labels[LabelInstance]}
	if loc.Owner == r.cfg.Instance && r.live.Has(id) {
		loc.Here = true
		return loc, nil
	}
	if loc.Owner != r.cfg.Instance {
		cctx, cancel := r.callCtx(ctx)
		l, err := r.cs.CoordinationV1().Leases(r.cfg.Namespace).Get(cctx, LeasePrefix+loc.Owner, metav1.GetOptions{})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			return sandbox.Location{}, fmt.Errorf("k8s: locate %s: lease of %s: %w", id, loc.Owner, err)
		}
		if err == nil {
			if holder, alive := r.leaseAlive(l, time.Now()); alive && holder == loc.Owner {
				// Only an address as this replica would advertise one: the
				// client's credentials go there.
				if u := l.Annotations[AnnotationURL]; validAdvertiseURL(u) {
					loc.URL = u
				}
				return loc, nil
			}
		}
	}
	if !adoptablePod(pod) {
		return sandbox.Location{}, fmt.Errorf("%w: %s (its pod is %s and no gateway serves it)", sandbox.ErrNotLocated, id, pod.Status.Phase)
	}
	a, err := r.describe(ctx, pod)
	if err != nil {
		return sandbox.Location{}, err
	}
	o, err := r.orphan(ctx, a)
	if err != nil {
		return sandbox.Location{}, fmt.Errorf("k8s: locate %s: %w", id, err)
	}
	loc.Orphan = &o
	return loc, nil
}

// Adopt implements sandbox.Adopter for a gateway restoring its own
// sessions from its store: it adopts st's session with AdoptSession and
// starts a fresh kernel when the pod's kernel is not running (the State
// of the result then has another Incarnation, and the session knows its
// variables are gone). The caller must Close or Detach the sandbox.
func (r *Runtime) Adopt(ctx context.Context, st sandbox.State) (sandbox.Sandbox, error) {
	sb, _, err := r.AdoptSession(ctx, st.ID)
	if err != nil {
		return nil, err
	}
	select {
	case <-sb.Exited():
		if err := sb.Restart(ctx); err != nil {
			_ = sb.Close(ctx)
			return nil, fmt.Errorf("k8s: adopt %s: restart: %w", st.ID, err)
		}
	default:
	}
	return sb, nil
}

// agentStatus asks an adoptable session's agent for its kernel's status,
// over a connection of its own (the session's pinned certificate).
func (r *Runtime) agentStatus(ctx context.Context, a Adoptable) (KernelStatus, error) {
	conf, err := AgentClientTLS(a.cert)
	if err != nil {
		return KernelStatus{}, err
	}
	t := newAgentTransport(conf)
	defer t.CloseIdleConnections()
	// The current owner's epoch: admitted, and it fences nobody.
	ac := &agentClient{base: "https://" + net.JoinHostPort(a.PodIP, strconv.Itoa(r.cfg.AgentPort)), token: a.token, epoch: a.epoch, http: newAgentHTTP(t)}
	return ac.wait(ctx, 0, "ready", 0)
}

// podEpoch is the pod's owner's epoch (AnnotationEpoch): 0 when it has
// none (a pod from before fencing) or a bad one.
func podEpoch(pod *corev1.Pod) int64 {
	e, err := strconv.ParseInt(pod.Annotations[AnnotationEpoch], 10, 64)
	if err != nil || e < 0 {
		return 0
	}
	return e
}
