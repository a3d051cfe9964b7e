package k8s

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSessionsMoveBetweenGateways runs the session layer on the k8s
// runtime over the simulated cluster (an integration test, so it imports
// the layer above): gateway A serves a session that took a pre-started
// pod (its tenant recorded on the pod when taken) and detaches it at
// shutdown; gateway B, with no store of A's, finds it in the cluster
// (sandbox.OrphanFinder) and serves it to the same tenant, variables intact.
func TestSessionsMoveBetweenGateways(t *testing.T) {
	cs := newClientset()
	startKubelet(t, cs, ns)
	ctx := context.Background()
	const tenant = "0123456789abcdef"
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)

	rtA := newRuntime(t, cs, testConfig("gw-a"))
	mA, err := sessions.New(sessions.Config{Pool: 1, StartTimeout: 60 * time.Second}, rtA, log)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopA := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- mA.Run(runCtx) }()
	for deadline := time.Now().Add(60 * time.Second); mA.Pool().Ready < 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool never filled: %+v", mA.Pool())
		}
	}
	s, err := mA.Create(ctx, tenant, sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := execute(t, s, "x = 41"); e.Status != "ok" {
		t.Fatalf("%+v", e)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, PodName(s.ID()), metav1.GetOptions{})
	if err != nil || pod.Labels[LabelTenant] != tenant {
		t.Fatalf("the pooled pod's tenant label: %v %v", pod.Labels, err)
	}
	stopA()
	<-runDone
	if err := mA.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rtA.ReleaseLease(ctx); err != nil {
		t.Fatal(err)
	}

	rtB := newRuntime(t, cs, testConfig("gw-b"))
	mB, err := sessions.New(sessions.Config{StartTimeout: 60 * time.Second}, rtB, log)
	if err != nil {
		t.Fatal(err)
	}
	defer mB.Close(ctx)
	res, err := mB.Restore(ctx)
	if err != nil || res.Adopted != 1 {
		t.Fatalf("restore: %+v %v", res, err)
	}
	if _, err := mB.Get("another-tenant", s.ID()); err == nil {
		t.Fatal("another tenant was served the adopted session")
	}
	sb, err := mB.Get(tenant, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if e := execute(t, sb, "x + 1"); string(e.Result) != `{"text/plain":"42"}` {
		t.Fatalf("x + 1 after moving to gateway B: %+v %s", e, e.Result)
	}
	// Whether its previews were private is not in the pod: an adopted
	// session's are, so that a failover never opens a private session's.
	if _, err := sessions.HostGranted(mB, s.ID()); !sb.Info().PrivatePreviews || !errors.Is(err, sessions.ErrPrivatePreviews) {
		t.Fatalf("an adopted session's previews: private %v, host grant %v", sb.Info().PrivatePreviews, err)
	}
	if err := mB.Delete(ctx, tenant, s.ID()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if p, sec := count(t, cs); p == 0 && sec == 0 { // A's pool closed its own at Detach
			break
		}
		if time.Now().After(deadline) {
			p, sec := count(t, cs)
			t.Fatalf("after delete: %d pods, %d secrets", p, sec)
		}
	}
}

func execute(t *testing.T, s *sessions.Session, code string) *sessions.Execution {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := s.First().Execute(ctx, sessions.ExecRequest{Code: code})
	if err != nil {
		t.Fatalf("execute %q: %v", code, err)
	}
	return e
}

// TestSessionsLocatedAcrossGateways: two live gateways over one (simulated)
// cluster. B locates A's session at A's advertised address, for its
// tenant only; once A stops renewing its Lease (killed), the first request
// to B adopts the session, variables intact, once however many ask at
// the same time.
func TestSessionsLocatedAcrossGateways(t *testing.T) {
	cs := newClientset()
	startKubelet(t, cs, ns)
	ctx := context.Background()
	const tenant = "0123456789abcdef"
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)

	cfgA, cfgB := testConfig("gw-a"), testConfig("gw-b")
	cfgA.AdvertiseURL, cfgB.AdvertiseURL = "http://127.0.0.1:18001", "http://127.0.0.1:18002"
	rtA, rtB := newRuntime(t, cs, cfgA), newRuntime(t, cs, cfgB)
	runA, killA := context.WithCancel(ctx)
	runB, stopB := context.WithCancel(ctx)
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- rtA.Run(runA) }()
	go func() { doneB <- rtB.Run(runB) }()
	defer func() { stopB(); <-doneB }()

	mA, err := sessions.New(sessions.Config{StartTimeout: 60 * time.Second}, rtA, log)
	if err != nil {
		t.Fatal(err)
	}
	mB, err := sessions.New(sessions.Config{StartTimeout: 60 * time.Second}, rtB, log)
	if err != nil {
		t.Fatal(err)
	}
	defer mB.Close(ctx)
	s, err := mA.Create(ctx, tenant, sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	execute(t, s, "x = 41")

	if got, where, err := mA.Locate(ctx, tenant, s.ID()); err != nil || got != s || where.URL != "" {
		t.Fatalf("A locates its own session: %v %+v %v", got, where, err)
	}
	if got, where, err := mB.Locate(ctx, tenant, s.ID()); err != nil || got != nil || where != (sessions.Elsewhere{Owner: "gw-a", URL: cfgA.AdvertiseURL}) {
		t.Fatalf("B locates A's session: %v %+v %v", got, where, err)
	}
	for _, c := range []struct{ tenant, id string }{{"fedcba9876543210", s.ID()}, {tenant, "no-such-session-0001"}, {tenant, "../x"}} {
		if _, where, err := mB.Locate(ctx, c.tenant, c.id); !errors.Is(err, sessions.ErrNotFound) {
			t.Fatalf("B locates %s of tenant %s: %+v %v, want ErrNotFound", c.id, c.tenant, where, err)
		}
	}

	// A is killed: its Lease is no longer renewed (its kernel connections
	// stay open, as a dead process's would until the kernel notices).
	killA()
	<-doneA
	rtA.Close() // its Lease is renewed no more
	// B adopts once A's Lease has lapsed, as B reads it.
	var lease *coordv1.Lease
	var leaseErr error
	testkit.Eventually(t, 10*cfgA.LeaseDuration, func() bool {
		lease, leaseErr = cs.CoordinationV1().Leases(ns).Get(ctx, LeasePrefix+cfgA.Instance, metav1.GetOptions{})
		if leaseErr != nil {
			return false
		}
		_, alive := rtB.leaseAlive(lease, time.Now())
		return !alive
	}, "A's Lease to lapse once it was renewed no more: last %v", testkit.Seen(func() any {
		if leaseErr != nil {
			return leaseErr
		}
		if lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
			return fmt.Sprintf("%+v", lease.Spec)
		}
		return fmt.Sprintf("renewed at %v for %d s", lease.Spec.RenewTime.Time, *lease.Spec.LeaseDurationSeconds)
	}))
	var wg sync.WaitGroup
	got := make([]*sessions.Session, 4)
	errs := make([]error, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, errs[i] = mB.Locate(ctx, tenant, s.ID())
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] == nil || got[i] != got[0] {
			t.Fatalf("concurrent locates after A's death: %v %v", got, errs)
		}
	}
	if e := execute(t, got[0], "x + 1"); string(e.Result) != `{"text/plain":"42"}` {
		t.Fatalf("x + 1 on B after A's death: %+v %s", e, e.Result)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, PodName(s.ID()), metav1.GetOptions{})
	if err != nil || pod.Labels[LabelInstance] != "gw-b" {
		t.Fatalf("the pod's owner after the move: %v %v", pod.Labels, err)
	}
	if err := mA.Detach(ctx); err != nil { // what is left of A lets go without deleting B's pod
		t.Fatal(err)
	}
}
