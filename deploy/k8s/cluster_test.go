package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/k8s"
	"github.com/glassroom/glassroom/kernel/runtime/k8s/k8stest"
	"github.com/glassroom/glassroom/testkit"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// TestBaseOnTheRealCluster applies deploy/k8s (the base users apply) to the
// real cluster (scripts/kube-up.sh), in a namespace of its own that
// enforces Pod Security "restricted", with two changes a two-core node
// needs: smaller CPU requests for the gateways, and kernel pods that
// request a twentieth of their CPU limit. The three gateway replicas
// start from the images in containerd, reach the API server through the
// kubernetes Service with their service account, and serve: a session
// created on one replica answers on the others (forwarded to its
// replica's advertised pod address); the replica that serves it is
// deleted (SIGTERM: it detaches the session and releases its Lease) and
// another serves the session on the next request, variables intact.
func TestBaseOnTheRealCluster(t *testing.T) {
	cs, namespace := k8stest.RealCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const key = "deploy-test-key-0123456789"
	if _, err := cs.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "glassroom-api-keys"},
		StringData: map[string]string{"keys": key}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "glassroom-url-signing-key"},
		StringData: map[string]string{"key": "deploy-test-url-signing-key-0123456789abcdef"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	for _, o := range build(t, ".") {
		if d, ok := o.(*appsv1.Deployment); ok {
			dep = d
			d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
			d.Spec.Template.Spec.Containers[0].Args = append(d.Spec.Template.Spec.Containers[0].Args,
				"--cpus=0.5", "--memory-mb=256", "--k8s-cpu-request-ratio=0.05")
		}
		apply(ctx, t, cs, namespace, o)
	}
	if dep == nil {
		t.Fatal("no Deployment in the base")
	}

	var pods []corev1.Pod
	if !testkit.Within(4*time.Minute, func() bool {
		list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=gateway"})
		if err != nil {
			return false
		}
		for _, p := range list.Items {
			for _, c := range p.Status.ContainerStatuses {
				if c.RestartCount >= 2 { // crashing: say why now
					return true
				}
			}
		}
		pods = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return !podReady(&p) })
		return len(pods) == int(*dep.Spec.Replicas)
	}) || len(pods) != int(*dep.Spec.Replicas) {
		gatewayLogs(ctx, t, cs, namespace)
		t.Fatalf("%d of %d gateway replicas ready", len(pods), *dep.Spec.Replicas)
	}
	base := func(p corev1.Pod) string { return "http://" + net.JoinHostPort(p.Status.PodIP, "8888") }

	call := func(p corev1.Pod, method, path string, body any) (int, map[string]any) {
		t.Helper()
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(ctx, method, base(p)+path, r)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s on %s: %v", method, path, p.Name, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	result := func(out map[string]any) string {
		r, _ := out["result"].(map[string]any)
		s, _ := r["text/plain"].(string)
		return s
	}

	st, created := call(pods[0], "POST", "/v1/sessions", nil)
	if st != http.StatusCreated {
		gatewayLogs(ctx, t, cs, namespace)
		t.Fatalf("create a session on %s: %d %v", pods[0].Name, st, created)
	}
	id, _ := created["id"].(string)
	if st, out := call(pods[0], "POST", "/v1/sessions/"+id+"/execute", map[string]any{"code": "x = 41"}); st != http.StatusOK || out["status"] != "ok" {
		t.Fatalf("x = 41: %d %v", st, out)
	}
	for _, p := range pods[1:] {
		if st, out := call(p, "POST", "/v1/sessions/"+id+"/execute", map[string]any{"code": "x + 1"}); st != http.StatusOK || result(out) != "42" {
			t.Fatalf("x + 1 through %s: %d %v", p.Name, st, out)
		}
	}

	// The serving replica goes away (as in a rolling update); the others
	// serve the session, its kernel and variables kept.
	if err := cs.CoreV1().Pods(namespace).Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	testkit.Eventually(t, 90*time.Second, func() bool {
		_, err := cs.CoreV1().Pods(namespace).Get(ctx, pods[0].Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, "the deleted replica's pod never went")
	gone := time.Now()
	var answered time.Duration
	testkit.Eventually(t, 90*time.Second, func() bool {
		st, out := call(pods[1+int(time.Since(gone)/time.Second)%2], "POST", "/v1/sessions/"+id+"/execute", map[string]any{"code": "x + 1"})
		if st == http.StatusOK && result(out) == "42" {
			answered = time.Since(gone)
			return true
		}
		time.Sleep(200 * time.Millisecond)
		return false
	}, "the session never answered after its replica was deleted")
	t.Logf("three replicas from deploy/k8s; its replica's pod took %v to go; the session answered %v later",
		gone.Sub(deleted).Round(time.Millisecond), answered.Round(time.Millisecond))
	// It is served by exactly one of the two, which its pod names.
	kernel, err := cs.CoreV1().Pods(namespace).Get(ctx, k8s.PodName(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Any gateway but the deleted one (the Deployment's replacement may
	// have adopted it first).
	if owner := kernel.Labels[k8s.LabelInstance]; owner == "" || owner == pods[0].Name {
		t.Fatalf("the session's pod is owned by %q", owner)
	}
}

// apply creates one object of the base in namespace (the base's own
// namespace object aside: the test's stands for it).
func apply(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace string, o runtime.Object) {
	t.Helper()
	var err error
	switch o := o.(type) {
	case *corev1.Namespace:
		return
	case *appsv1.Deployment:
		o.Namespace = namespace
		_, err = cs.AppsV1().Deployments(namespace).Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Service:
		o.Namespace = namespace
		_, err = cs.CoreV1().Services(namespace).Create(ctx, o, metav1.CreateOptions{})
	case *corev1.ServiceAccount:
		o.Namespace = namespace
		_, err = cs.CoreV1().ServiceAccounts(namespace).Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.Role:
		o.Namespace = namespace
		_, err = cs.RbacV1().Roles(namespace).Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.RoleBinding:
		o.Namespace = namespace
		for i := range o.Subjects {
			o.Subjects[i].Namespace = namespace
		}
		_, err = cs.RbacV1().RoleBindings(namespace).Create(ctx, o, metav1.CreateOptions{})
	case *networkingv1.NetworkPolicy:
		o.Namespace = namespace
		_, err = cs.NetworkingV1().NetworkPolicies(namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		err = fmt.Errorf("the test does not apply %T", o)
	}
	if err != nil {
		t.Fatalf("apply %T: %v", o, err)
	}
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// gatewayLogs logs what the gateway pods printed and why they are not
// ready.
func gatewayLogs(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace string) {
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=gateway"})
	if err != nil {
		t.Logf("list gateway pods: %v", err)
		return
	}
	for _, p := range list.Items {
		t.Logf("pod %s: phase %s, conditions %+v, containers %+v", p.Name, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
		// The kubelet keeps the logs on this node (the API server cannot
		// fetch them: the test cluster's kubelet serves on loopback only).
		files, _ := filepath.Glob(filepath.Join("/var/log/pods", namespace+"_"+p.Name+"_*", "gateway", "*.log"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if len(b) > 4096 {
				b = b[len(b)-4096:]
			}
			t.Logf("its log %s:\n%s", f, strings.TrimSpace(string(b)))
		}
	}
}
