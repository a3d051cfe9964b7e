package k8s

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selector selects the kernel pods and Secrets glassroom made.
func selector() string {
	return LabelManagedBy + "=glassroom," + LabelComponent + "=kernel"
}

// renewLease creates or renews this gateway's Lease: while it is fresh,
// other gateways leave this one's sessions alone.
func (r *Runtime) renewLease(ctx context.Context) error {
	leases := r.cs.CoordinationV1().Leases(r.cfg.Namespace)
	name := LeasePrefix + r.cfg.Instance
	now := metav1.NewMicroTime(time.Now())
	secs := int32(r.cfg.LeaseDuration / time.Second)
	holder := r.cfg.Instance
	// A renewal that takes longer than the interval is too late anyway.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(r.cfg.CallTimeout, r.cfg.RenewInterval))
	defer cancel()
	var annotations map[string]string
	if r.cfg.AdvertiseURL != "" {
		annotations = map[string]string{AnnotationURL: r.cfg.AdvertiseURL}
	}
	l, err := leases.Get(cctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(cctx, &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.cfg.Namespace, Labels: map[string]string{LabelName: "glassroom", LabelComponent: "gateway"}, Annotations: annotations},
			Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{})
	} else if err == nil {
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &secs, &now
		if l.Annotations[AnnotationURL] != r.cfg.AdvertiseURL {
			if l.Annotations == nil {
				l.Annotations = map[string]string{}
			}
			l.Annotations[AnnotationURL] = r.cfg.AdvertiseURL
		}
		_, err = leases.Update(cctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("%w: k8s: lease %s: %w", errLease, name, err)
	}
	return nil
}

var errLease = errors.New("k8s: lease")

// ReleaseLease stops renewing this gateway's Lease and deletes it, so
// other gateways may adopt its sessions at once (call it after detaching
// them, at shutdown).
func (r *Runtime) ReleaseLease(ctx context.Context) error {
	r.endRenewal()
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	err := r.cs.CoordinationV1().Leases(r.cfg.Namespace).Delete(cctx, LeasePrefix+r.cfg.Instance, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("k8s: release lease: %w", err)
	}
	return nil
}

// aliveGateways returns the instances whose Lease is fresh.
func (r *Runtime) aliveGateways(ctx context.Context) (map[string]bool, error) {
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	list, err := r.cs.CoordinationV1().Leases(r.cfg.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelName + "=glassroom," + LabelComponent + "=gateway"})
	if err != nil {
		return nil, fmt.Errorf("k8s: list leases: %w", err)
	}
	alive := map[string]bool{r.cfg.Instance: true}
	now := time.Now()
	listed := map[string]bool{}
	for i := range list.Items {
		listed[list.Items[i].Name] = true
		if holder, ok := r.leaseAlive(&list.Items[i], now); ok {
			alive[holder] = true
		}
	}
	r.mu.Lock()
	for name := range r.leaseSeen { // gone gateways' Leases: forget them
		if !listed[name] {
			delete(r.leaseSeen, name)
		}
	}
	r.mu.Unlock()
	return alive, nil
}

// maxPeers bounds the other gateways Peers returns.
const maxPeers = 64

// Peers implements sandbox.PeerLister: the other gateways whose Lease is
// fresh and names, as its own, an address as a replica advertises one
// (only there may a client's credentials go), sorted by instance.
func (r *Runtime) Peers(ctx context.Context) ([]sandbox.Peer, error) {
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	list, err := r.cs.CoordinationV1().Leases(r.cfg.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelName + "=glassroom," + LabelComponent + "=gateway"})
	if err != nil {
		return nil, fmt.Errorf("k8s: list leases: %w", err)
	}
	now := time.Now()
	var out []sandbox.Peer
	for i := range list.Items {
		l := &list.Items[i]
		holder, ok := r.leaseAlive(l, now)
		if !ok || holder == r.cfg.Instance || l.Name != LeasePrefix+holder || !validAdvertiseURL(l.Annotations[AnnotationURL]) {
			continue
		}
		out = append(out, sandbox.Peer{Instance: holder, URL: l.Annotations[AnnotationURL]})
	}
	slices.SortFunc(out, func(a, b sandbox.Peer) int { return strings.Compare(a.Instance, b.Instance) })
	if len(out) > maxPeers {
		out = out[:maxPeers]
	}
	return out, nil
}

// leaseAlive returns a gateway Lease's holder, and whether it was renewed
// within its duration.
//
// Judged on this gateway's clock alone, so that no skew between the
// replicas' clocks matters: a Lease is alive while its renewTime has
// changed within its duration as this gateway saw it (it remembers when
// it first saw each renewTime). The renewTime's own value, written with
// the owner's clock, is never compared with this clock. So a Lease
// expires between its duration and its duration plus the time between
// two of this gateway's looks after the owner's last renewal; one seen
// for the first time counts as just renewed. An adoption cannot come
// early, whatever the clocks say; and should one come while the old
// owner still runs (a paused replica), the pod's agent fences it.
func (r *Runtime) leaseAlive(l *coordv1.Lease, now time.Time) (string, bool) {
	if l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return "", false
	}
	holder, renewed := *l.Spec.HolderIdentity, l.Spec.RenewTime.Time
	dur := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	r.mu.Lock()
	defer r.mu.Unlock()
	seen, ok := r.leaseSeen[l.Name]
	if !ok || !seen.renewed.Equal(renewed) || seen.holder != holder {
		r.leaseSeen[l.Name] = leaseSighting{holder: holder, renewed: renewed, at: now}
		return holder, true
	}
	return holder, now.Sub(seen.at) < dur
}

// leaseSighting is when this gateway first saw a Lease's renewTime.
type leaseSighting struct {
	holder  string
	renewed time.Time // the Lease's renewTime (the owner's clock)
	at      time.Time // when this gateway first saw it (its clock, monotonic)
}

// ownerless reports whether a pod's session has no gateway now: its
// owner's Lease expired, or it is this gateway's and not live here (a
// previous run of this instance).
func (r *Runtime) ownerless(pod *corev1.Pod, alive map[string]bool) bool {
	owner := pod.Labels[LabelInstance]
	if owner == r.cfg.Instance {
		return !r.live.Has(pod.Labels[LabelSession])
	}
	return !alive[owner]
}

// Reconcile deletes kernel pods that no gateway will serve again: pods
// past their expiry, pods that ended (failed, evicted), and pods left
// without a live gateway for longer than OrphanGrace (time for another
// gateway to adopt them); and Secrets whose pod is gone. Each API call is
// bounded by CallTimeout.
func (r *Runtime) Reconcile(ctx context.Context) error {
	alive, err := r.aliveGateways(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := r.callCtx(ctx)
	pods, err := r.cs.CoreV1().Pods(r.cfg.Namespace).List(cctx, metav1.ListOptions{LabelSelector: selector()})
	cancel()
	if err != nil {
		return fmt.Errorf("k8s: reconcile: list pods: %w", err)
	}
	now := time.Now()
	exists := map[string]bool{}
	seen := map[string]bool{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		exists[pod.Name] = true
		id := pod.Labels[LabelSession]
		if id == "" || pod.Name != PodName(id) || r.live.Has(id) {
			continue
		}
		reason := ""
		expires, perr := time.Parse(time.RFC3339, pod.Annotations[AnnotationExpires])
		switch {
		case pod.DeletionTimestamp != nil:
			continue
		case perr == nil && now.After(expires):
			reason = "past its maximum lifetime"
		case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
			reason = podEnded(pod)
		case r.ownerless(pod, alive):
			seen[id] = true
			r.mu.Lock()
			since, ok := r.orphanSince[id]
			if !ok {
				r.orphanSince[id], since = now, now
			}
			r.mu.Unlock()
			if now.Sub(since) >= r.cfg.OrphanGrace {
				reason = "no gateway adopted it"
			}
		}
		if reason != "" {
			r.log.Info().Str("pod", pod.Name).Str("why", reason).Msg("removing orphaned kernel pod")
			r.deleteSession(ctx, pod.Name)
		}
	}
	r.mu.Lock()
	for id := range r.orphanSince {
		if !seen[id] {
			delete(r.orphanSince, id)
		}
	}
	r.mu.Unlock()
	// Secrets without a pod: a gateway died between the two creations.
	cctx, cancel = r.callCtx(ctx)
	secrets, err := r.cs.CoreV1().Secrets(r.cfg.Namespace).List(cctx, metav1.ListOptions{LabelSelector: selector()})
	cancel()
	if err != nil {
		return fmt.Errorf("k8s: reconcile: list secrets: %w", err)
	}
	for _, s := range secrets.Items {
		id := s.Labels[LabelSession]
		if exists[s.Name] || id == "" || s.Name != PodName(id) || r.live.Has(id) || now.Sub(s.CreationTimestamp.Time) < 2*r.cfg.StartTimeout {
			continue
		}
		r.log.Info().Str("secret", s.Name).Msg("removing a session secret without its pod")
		cctx, cancel := r.callCtx(ctx)
		if err := r.cs.CoreV1().Secrets(r.cfg.Namespace).Delete(cctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			r.log.Warn().Err(err).Str("secret", s.Name).Msg("removing secret failed")
		}
		cancel()
	}
	return nil
}

// deleteSession deletes a session's pod (with the grace period) and Secret.
func (r *Runtime) deleteSession(ctx context.Context, name string) {
	grace := int64(r.cfg.DeleteGrace / time.Second)
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	if err := r.cs.CoreV1().Pods(r.cfg.Namespace).Delete(cctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !apierrors.IsNotFound(err) {
		r.log.Warn().Err(err).Str("pod", name).Msg("removing pod failed")
	}
	if err := r.cs.CoreV1().Secrets(r.cfg.Namespace).Delete(cctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		r.log.Warn().Err(err).Str("secret", name).Msg("removing secret failed")
	}
}
