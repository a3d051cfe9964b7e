package k8stest

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// DefaultKubeconfig is where scripts/kube-up.sh writes the admin
// kubeconfig of its single-node cluster.
const DefaultKubeconfig = "/var/lib/glassroom-kube/admin.kubeconfig"

var clusterSeq atomic.Int64

// Kubeconfig is the test cluster's admin kubeconfig:
// GLASSROOM_TEST_KUBECONFIG, else DefaultKubeconfig.
func Kubeconfig() string {
	if p := os.Getenv("GLASSROOM_TEST_KUBECONFIG"); p != "" {
		return p
	}
	return DefaultKubeconfig
}

// RealCluster returns a client of the real cluster the tests run on
// (GLASSROOM_TEST_KUBECONFIG, else scripts/kube-up.sh's) and a new
// namespace that enforces Pod Security "restricted" through the API
// server's own admission; the namespace is deleted when the test ends.
// Without a cluster the test is skipped, or fails under CI=true (`make
// test` brings one up first).
func RealCluster(t testing.TB) (kubernetes.Interface, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("the real cluster is not in the short tier")
	}
	path := Kubeconfig()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no cluster (%v): `make test` runs scripts/kube-up.sh first", err)
		}
		t.Skipf("no cluster: %v (scripts/kube-up.sh up)", err)
	}
	cs := Client(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	removeStaleNamespaces(ctx, t, cs)
	name := "glassroom-test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(clusterSeq.Add(1), 10)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("cluster: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	// A pod is admitted only once its namespace's default service account
	// exists (the controller manager makes it).
	if !testkit.Within(30*time.Second, func() bool {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	}) {
		t.Fatalf("namespace %s has no default service account", name)
	}
	return cs, name
}

// removeStaleNamespaces deletes the test namespaces of test processes
// that no longer run (killed before their cleanup): their pods would hold
// the node's CPU.
func removeStaleNamespaces(ctx context.Context, t testing.TB, cs kubernetes.Interface) {
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	for _, n := range list.Items {
		rest, ok := strings.CutPrefix(n.Name, "glassroom-test-")
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || n.DeletionTimestamp != nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("stale namespace %s: %v", n.Name, err)
		}
	}
}

// Client is a client of its own: client-go shares one transport
// per configuration across the process, whose connections outlive the
// test (goleak); a Dial of our own keeps it out of that cache, and the
// cleanup closes its connections.
func Client(t testing.TB, kubeconfig string) kubernetes.Interface {
	t.Helper()
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { utilnet.CloseIdleConnectionsFor(hc.Transport) })
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
