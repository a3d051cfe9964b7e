package k8s

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// driver runs one session's pod (sandbox.Driver and sandbox.Connector).
// A kernel incarnation is a generation of the pod's supervisor: Launch
// asks the agent for a new one, Kill for its end; the pod, its workspace
// and its IP stay. Two goroutines watch it: one follows the pod (its
// deletion, failure, the kernel container's end), one per generation
// long-polls the agent for that generation's end.
type driver struct {
	r      *Runtime
	id     string
	name   string
	limits sandbox.Limits
	key    string
	token  string
	cert   []byte // the agent's certificate (PEM), pinned

	tls       *tls.Config // nil only for a certificate that does not parse (every call then fails)
	transport *http.Transport
	http      *http.Client

	ctx    context.Context // ends the goroutines (stop)
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kept   bool // the objects are not ours to delete

	epoch     atomic.Int64  // this gateway's epoch for the pod (fence.go); set before use
	fenced    chan struct{} // closed when the agent refuses the epoch
	fenceOnce sync.Once

	mu        sync.Mutex
	pod       *corev1.Pod
	changed   chan struct{} // closed and replaced on every pod change
	gone      string        // why the pod is gone, or ""
	ip        string
	gen       int64 // the last generation prepared
	inc       *sandbox.Incarnation
	incGen    int64
	kernelCID string // the kernel container the current generation runs in
	watching  bool
	lastProb  string
	relay     *channelRelay // made by the first Prepare, closed by stop
}

func (r *Runtime) newDriver(id string, limits sandbox.Limits, key, token string, cert []byte) *driver {
	ctx, cancel := context.WithCancel(context.Background())
	conf, err := AgentClientTLS(cert)
	if err != nil {
		r.log.Warn().Err(err).Str("session", id).Msg("the pod agent cannot be reached")
	}
	t := newAgentTransport(conf)
	return &driver{r: r, id: id, name: PodName(id), limits: limits, key: key, token: token, cert: cert,
		tls: conf, transport: t, http: newAgentHTTP(t),
		ctx: ctx, cancel: cancel, changed: make(chan struct{}), fenced: make(chan struct{})}
}

func (d *driver) keep() { d.kept = true }

func (d *driver) agent() *agentClient {
	return &agentClient{base: d.agentBase(), token: d.token, epoch: d.epoch.Load(), http: d.http}
}

// checkFenced notes err, an answer of the pod's agent: errFenced means
// another gateway adopted the session, so this one's kernel is over here
// (its incarnation ends, saying so) and Fenced closes. It returns err.
func (d *driver) checkFenced(err error) error {
	if !errors.Is(err, errFenced) {
		return err
	}
	d.fenceOnce.Do(func() {
		d.r.log.Warn().Str("session", d.id).Int64("epoch", d.epoch.Load()).Msg("fenced: another gateway adopted the session; letting it go")
		close(d.fenced)
	})
	d.mu.Lock()
	inc := d.inc
	d.mu.Unlock()
	if inc != nil {
		inc.Exit(fencedReason)
	}
	return err
}

// fencedReason is a fenced kernel's exit reason.
const fencedReason = "fenced: another gateway replica adopted this session (this one lost its lease); reconnect"

func (d *driver) agentBase() string {
	return "https://" + d.agentAddr()
}

func (d *driver) agentAddr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return net.JoinHostPort(d.ip, strconv.Itoa(d.r.cfg.AgentPort))
}

// dialChannel opens a tunnel to one of the kernel's channels through the
// pod's agent (channelRelay).
func (d *driver) dialChannel(ctx context.Context, ch kernel.Channel) (net.Conn, error) {
	if d.tls == nil {
		return nil, fmt.Errorf("%w: k8s: no usable agent certificate for %s", sandbox.ErrUnavailable, d.name)
	}
	c, err := dialAgentChannel(ctx, d.agentAddr(), d.tls, d.token, d.epoch.Load(), ch)
	return c, d.checkFenced(err)
}

// connection returns what the gateway's kernel client connects to: the
// channel relay's sockets (made on first use), with the session's key.
func (d *driver) connection() (kernel.ConnectionInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.relay == nil {
		r, err := newChannelRelay(d.dialChannel)
		if err != nil {
			return kernel.ConnectionInfo{}, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
		}
		d.relay = r
	}
	return d.relay.connection(d.key), nil
}

// startWatch starts following the pod.
func (d *driver) startWatch(pod *corev1.Pod) {
	d.observe(pod)
	d.mu.Lock()
	d.watching = true
	d.mu.Unlock()
	d.wg.Add(1)
	go d.watchPod()
}

// watchPod follows the pod until stop; it re-watches when a watch ends.
func (d *driver) watchPod() {
	defer d.wg.Done()
	pods := d.r.cs.CoreV1().Pods(d.r.cfg.Namespace)
	for d.ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(d.ctx, d.r.cfg.CallTimeout)
		pod, err := pods.Get(cctx, d.name, metav1.GetOptions{})
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			d.setGone("the pod was deleted")
			return
		case err == nil:
			d.observe(pod)
		}
		rv := ""
		if pod != nil {
			rv = pod.ResourceVersion
		}
		w, err := pods.Watch(d.ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", d.name).String(), ResourceVersion: rv})
		if err == nil {
			if d.consume(w) {
				return
			}
			w.Stop()
		}
		select {
		case <-d.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// consume handles a watch's events; it reports whether the pod is gone.
func (d *driver) consume(w watch.Interface) bool {
	for {
		select {
		case <-d.ctx.Done():
			w.Stop()
			return true
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false
			}
			pod, isPod := ev.Object.(*corev1.Pod)
			switch {
			case !isPod || pod.Name != d.name:
				if ev.Type == watch.Error {
					return false
				}
			case ev.Type == watch.Deleted:
				d.setGone("the pod was deleted")
				w.Stop()
				return true
			default:
				d.observe(pod)
			}
		}
	}
}

// observe records the pod's latest state and ends the current generation
// if its kernel container or the pod is gone.
func (d *driver) observe(pod *corev1.Pod) {
	d.mu.Lock()
	d.pod = pod
	inc, cid := d.inc, d.kernelCID
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
	if inc == nil {
		return
	}
	if cid != "" {
		if reason, gone := kernelGone(pod, cid, d.limits.MemoryMB); gone {
			inc.Exit(reason)
		}
		return
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		inc.Exit(podEnded(pod))
	}
}

func (d *driver) setGone(reason string) {
	d.mu.Lock()
	d.gone = reason
	inc := d.inc
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
	if inc != nil {
		inc.Exit(reason)
	}
}

func (d *driver) state() (*corev1.Pod, string, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pod, d.gone, d.changed
}

// refresh reads the pod now (a watch may have missed a change).
func (d *driver) refresh(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
	defer cancel()
	pod, err := d.r.cs.CoreV1().Pods(d.r.cfg.Namespace).Get(cctx, d.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		d.setGone("the pod was deleted")
	case err == nil:
		d.observe(pod)
	}
}

// waitPodReady waits until the pod is Ready (its probes passed: the first
// kernel listens and the agent answers), failing at once on what waiting
// will not mend (image pulls, containers that cannot start or keep
// exiting), and after StartTimeout on the rest (an unschedulable pod).
func (d *driver) waitPodReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.r.cfg.StartTimeout)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	last := "the pod was not scheduled yet"
	for {
		pod, gone, changed := d.state()
		if gone != "" {
			return fmt.Errorf("%w: k8s: pod %s: %s", sandbox.ErrUnavailable, d.name, gone)
		}
		if pod != nil {
			if podReady(pod) {
				d.mu.Lock()
				d.ip = pod.Status.PodIP
				d.mu.Unlock()
				return nil
			}
			if p, ok := startProblem(pod, d.limits.MemoryMB); ok {
				d.setProblem(p.msg)
				if p.fatal {
					return fmt.Errorf("%w: k8s: pod %s: %s", sandbox.ErrUnavailable, d.name, p.msg)
				}
				last = p.msg
			} else if pod.Status.Phase != "" {
				last = "pod " + string(pod.Status.Phase) + ", not ready"
			}
		}
		select {
		case <-changed:
		case <-tick.C:
			d.refresh(ctx)
		case <-ctx.Done():
			return fmt.Errorf("%w: k8s: pod %s not ready: %s: %w", sandbox.ErrUnavailable, d.name, last, ctx.Err())
		}
	}
}

func (d *driver) setProblem(msg string) {
	d.mu.Lock()
	d.lastProb = msg
	d.mu.Unlock()
}

// Prepare implements sandbox.Connector: the next generation, reached
// through the channel relay with the session's key.
func (d *driver) Prepare(context.Context) (kernel.ConnectionInfo, error) {
	d.mu.Lock()
	ip := d.ip
	d.mu.Unlock()
	if ip == "" {
		return kernel.ConnectionInfo{}, fmt.Errorf("%w: k8s: pod %s has no IP", sandbox.ErrUnavailable, d.name)
	}
	info, err := d.connection()
	if err != nil {
		return kernel.ConnectionInfo{}, err
	}
	d.mu.Lock()
	d.gen++
	d.mu.Unlock()
	return info, nil
}

// Launch implements sandbox.Driver: it asks the agent to run the prepared
// generation and starts the waiter that reports its end.
func (d *driver) Launch(ctx context.Context, inc *sandbox.Incarnation) (sandbox.Process, error) {
	d.mu.Lock()
	gen := d.gen
	d.inc, d.incGen, d.kernelCID = inc, gen, ""
	gone := d.gone
	d.mu.Unlock()
	if gone != "" {
		inc.Exit(gone)
		return nil, fmt.Errorf("%w: k8s: pod %s: %s", sandbox.ErrUnavailable, d.name, gone)
	}
	cctx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
	err := d.checkFenced(d.agent().command(cctx, KernelCommand{Gen: gen, Run: true}))
	cancel()
	if err != nil {
		inc.Exit("not started: " + err.Error())
		return nil, fmt.Errorf("%w: k8s: start kernel: %w", sandbox.ErrUnavailable, err)
	}
	d.waitExit(inc, gen)
	return &process{d: d, gen: gen, inc: inc}, nil
}

// waitExit starts the goroutine that ends inc when the agent reports its
// generation over. It exits with inc or stop.
func (d *driver) waitExit(inc *sandbox.Incarnation, gen int64) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			st, err := d.agent().wait(d.ctx, gen, "ended", 20*time.Second)
			if errors.Is(d.checkFenced(err), errFenced) {
				return
			}
			if err == nil && met(st, gen, "ended") {
				inc.Exit(d.exitReason(st, gen))
				return
			}
			select {
			case <-inc.Exited():
				return
			case <-d.ctx.Done():
				return
			default:
			}
			if err != nil {
				select { // the agent is unreachable: the pod watch may know why
				case <-inc.Exited():
					return
				case <-d.ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
		}
	}()
}

func (d *driver) exitReason(st KernelStatus, gen int64) string {
	switch {
	case st.Gen > gen:
		return "replaced by a newer kernel"
	case st.State == "stopped":
		return "stopped"
	case strings.HasPrefix(st.Reason, "OOMKilled"):
		return "OOMKilled: the kernel exceeded its memory limit of " + strconv.Itoa(d.limits.MemoryMB) + " MB"
	case st.Reason != "":
		return st.Reason
	}
	return "exited"
}

// WaitReady implements sandbox.Connector: the agent reports the
// generation ready (its five ports accept inside the pod), then the
// gateway opens a tunnel to each channel once.
func (d *driver) WaitReady(ctx context.Context, inc *sandbox.Incarnation) error {
	d.mu.Lock()
	gen := d.incGen
	d.mu.Unlock()
	last := "no answer from the pod agent"
	for {
		select {
		case <-inc.Exited():
			return fmt.Errorf("%w: kernel exited during start: %s", sandbox.ErrUnavailable, inc.ExitReason())
		case <-ctx.Done():
			return fmt.Errorf("%w: kernel did not start: %s: %w", sandbox.ErrUnavailable, last, ctx.Err())
		default:
		}
		if pod, _, _ := d.state(); pod != nil {
			if p, ok := startProblem(pod, d.limits.MemoryMB); ok && p.fatal {
				d.setProblem(p.msg)
				return fmt.Errorf("%w: k8s: pod %s: %s", sandbox.ErrUnavailable, d.name, p.msg)
			}
		}
		st, err := d.agent().wait(ctx, gen, "ready", time.Second)
		err = d.checkFenced(err)
		switch {
		case err != nil:
			last = err.Error()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		case st.Gen == gen && st.State == "ready":
			if err := dialAll(ctx, d.dialChannel); err != nil {
				last = err.Error()
				continue
			}
			d.mu.Lock()
			if pod := d.pod; pod != nil && d.inc == inc {
				d.kernelCID = runningKernelID(pod)
			}
			d.mu.Unlock()
			return nil
		case met(st, gen, "ended"):
			inc.Exit(d.exitReason(st, gen))
		default:
			last = fmt.Sprintf("kernel generation %d: %q", st.Gen, st.State)
		}
	}
}

// dialAll opens a tunnel to each of a kernel's five channels once, with
// dial (the first kernel's, or a context's).
func dialAll(ctx context.Context, dial channelDialer) error {
	for _, ch := range kernel.Channels {
		cctx, cancel := context.WithTimeout(ctx, channelDialTimeout)
		c, err := dial(cctx, ch)
		cancel()
		if err != nil {
			return fmt.Errorf("kernel %s channel: %w", ch, err)
		}
		c.Close()
	}
	return nil
}

// stop ends the driver's goroutines and waits for them.
// State implements sandbox.DriverStater: the incarnation is the kernel's
// generation in its pod (the agent counts the kernels it started).
func (d *driver) State() (json.RawMessage, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return nil, strconv.FormatInt(d.incGen, 10)
}

// Detach implements sandbox.DriverDetacher: the driver's watches end and
// the session is no longer live here, so another gateway (or this one,
// later) can adopt it; the pod and its kernel run on.
func (d *driver) Detach(context.Context) error {
	d.stop()
	d.r.live.Forget(d.id)
	return nil
}

// stop ends the driver's goroutines and the channel relay and waits for
// them. It may be called more than once.
func (d *driver) stop() {
	d.cancel()
	d.wg.Wait()
	d.mu.Lock()
	relay := d.relay
	d.mu.Unlock()
	if relay != nil {
		if err := relay.Close(); err != nil {
			d.r.log.Warn().Err(err).Str("session", d.id).Msg("channel relay: cleanup")
		}
	}
	d.transport.CloseIdleConnections()
}

// Destroy implements sandbox.Driver: it deletes the pod (with the grace
// period) and its Secret, even with a done ctx, and stops the goroutines.
func (d *driver) Destroy(ctx context.Context) error {
	d.stop()
	if d.kept || sandbox.IsDone(d.fenced) { // another gateway's now
		return nil
	}
	var errs []error
	grace := int64(d.r.cfg.DeleteGrace / time.Second)
	bg := metav1.DeletePropagationBackground
	cctx, cancel := d.r.callCtx(ctx)
	err := d.r.cs.CoreV1().Pods(d.r.cfg.Namespace).Delete(cctx, d.name, metav1.DeleteOptions{GracePeriodSeconds: &grace, PropagationPolicy: &bg})
	cancel()
	if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("k8s: delete pod %s: %w", d.name, err))
	}
	cctx, cancel = d.r.callCtx(ctx)
	err = d.r.cs.CoreV1().Secrets(d.r.cfg.Namespace).Delete(cctx, d.name, metav1.DeleteOptions{})
	cancel()
	if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("k8s: delete secret %s: %w", d.name, err))
	}
	return errors.Join(errs...)
}

// process is one generation (sandbox.Process).
type process struct {
	d   *driver
	gen int64
	inc *sandbox.Incarnation
}

// Kill implements sandbox.Process: the supervisor kills every process of
// the sandbox. An agent that cannot be reached ends the incarnation here
// (the pod is gone or unusable; Close deletes it).
func (p *process) Kill(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, p.d.r.cfg.CallTimeout)
	defer cancel()
	if err := p.d.checkFenced(p.d.agent().command(cctx, KernelCommand{Gen: p.gen, Run: false})); err != nil {
		p.inc.Exit(errAgentUnreachable.Error() + ": " + err.Error())
		return nil
	}
	return nil
}

// Diagnostics implements sandbox.Process: what the pod's status says, and
// the kernel container's last output.
func (p *process) Diagnostics() string {
	p.d.mu.Lock()
	msg := p.d.lastProb
	p.d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	tail, limit := int64(20), int64(8<<10)
	rc, err := p.d.r.cs.CoreV1().Pods(p.d.r.cfg.Namespace).GetLogs(p.d.name, &corev1.PodLogOptions{Container: KernelContainer, TailLines: &tail, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		return msg
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, limit))
	return strings.TrimSpace(msg + "\n" + strings.ToValidUTF8(string(b), "?"))
}
