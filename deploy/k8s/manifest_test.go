package deploy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// build runs `kubectl kustomize dir` (kustomize's library, as kubectl
// embeds it) and decodes every object strictly: unknown or duplicate
// fields, or a kind client-go does not know, fail.
func build(t *testing.T, dir string) []runtime.Object {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	decode := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []runtime.Object
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := decode.Decode(y, nil, nil)
		if err != nil {
			t.Fatalf("%s/%s: %v\n%s", r.GetKind(), r.GetName(), err, y)
		}
		out = append(out, obj)
	}
	return out
}

func TestBase(t *testing.T) {
	objs := build(t, ".")
	var dep *appsv1.Deployment
	var svc *corev1.Service
	var role *rbacv1.Role
	var binding *rbacv1.RoleBinding
	var sa *corev1.ServiceAccount
	var ns *corev1.Namespace
	policies := map[string]*networkingv1.NetworkPolicy{}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			dep = o
		case *corev1.Service:
			svc = o
		case *rbacv1.Role:
			role = o
		case *rbacv1.RoleBinding:
			binding = o
		case *corev1.ServiceAccount:
			sa = o
		case *corev1.Namespace:
			ns = o
		case *networkingv1.NetworkPolicy:
			policies[o.Name] = o
		case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			t.Fatalf("cluster-wide RBAC in the base: %T", o)
		default:
			t.Fatalf("unexpected object %T", o)
		}
	}
	if ns == nil || ns.Name != "glassroom" || ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Fatalf("namespace %+v", ns)
	}
	for _, o := range []interface{ GetNamespace() string }{dep, svc, role, binding, sa, policies["glassroom-kernels"], policies["glassroom-gateway"]} {
		if o == nil || o.GetNamespace() != "glassroom" {
			t.Fatalf("an object is missing or outside the namespace: %#v", o)
		}
	}

	// The gateway: three replicas (any answers for any session), locked
	// down, its identity and advertised address from the downward API.
	if *dep.Spec.Replicas != 3 || dep.Spec.Template.Spec.ServiceAccountName != sa.Name {
		t.Fatalf("deployment %+v", dep.Spec)
	}
	ps := dep.Spec.Template.Spec
	if !*ps.SecurityContext.RunAsNonRoot || ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatal("gateway pod security context")
	}
	c := ps.Containers[0]
	sc := c.SecurityContext
	if *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
		t.Fatal("gateway container security context")
	}
	// The channel relays need a writable /tmp (read-only root, no /tmp in
	// the image): a small memory-backed emptyDir; the session store an
	// emptyDir at the --state-dir.
	if len(c.VolumeMounts) != 3 || c.VolumeMounts[0].MountPath != "/tmp" || len(ps.Volumes) != 3 || ps.Volumes[0].Name != c.VolumeMounts[0].Name ||
		ps.Volumes[0].EmptyDir == nil || ps.Volumes[0].EmptyDir.Medium != corev1.StorageMediumMemory {
		t.Fatalf("gateway /tmp: mounts %+v, volumes %+v", c.VolumeMounts, ps.Volumes)
	}
	if c.VolumeMounts[1].MountPath != "/var/lib/glassroom" || ps.Volumes[1].Name != c.VolumeMounts[1].Name || ps.Volumes[1].EmptyDir == nil ||
		!slices.Contains(c.Args, "--state-dir=/var/lib/glassroom") {
		t.Fatalf("gateway state dir: args %v, mounts %+v, volumes %+v", c.Args, c.VolumeMounts, ps.Volumes)
	}
	// Snapshots: a volume of their own, bounded below its size.
	if c.VolumeMounts[2].MountPath != "/var/lib/glassroom-snapshots" || ps.Volumes[2].Name != c.VolumeMounts[2].Name || ps.Volumes[2].EmptyDir == nil ||
		!slices.Contains(c.Args, "--snapshot-dir=/var/lib/glassroom-snapshots") || !slices.Contains(c.Args, "--snapshot-tenant-mb=2048") ||
		ps.Volumes[2].EmptyDir.SizeLimit.Cmp(resource.MustParse("2Gi")) <= 0 {
		t.Fatalf("gateway snapshots: args %v, mounts %+v, volumes %+v", c.Args, c.VolumeMounts, ps.Volumes)
	}
	if !strings.Contains(strings.Join(c.Args, " "), "--runtime=k8s") {
		t.Fatalf("args %v", c.Args)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if env["GLASSROOM_INSTANCE"].ValueFrom.FieldRef.FieldPath != "metadata.name" || env["GLASSROOM_K8S_NAMESPACE"].ValueFrom.FieldRef.FieldPath != "metadata.namespace" ||
		env["GLASSROOM_API_KEYS"].ValueFrom.SecretKeyRef.Name != "glassroom-api-keys" ||
		env["GLASSROOM_URL_SIGNING_KEY"].ValueFrom.SecretKeyRef.Name != "glassroom-url-signing-key" {
		t.Fatalf("env %+v", c.Env)
	}
	// The advertised address is the pod's, on the container's port; POD_IP
	// comes first (Kubernetes expands only variables defined before).
	podIP, advertise := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_IP" }),
		slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GLASSROOM_K8S_ADVERTISE_URL" })
	if podIP < 0 || advertise < podIP || c.Env[podIP].ValueFrom.FieldRef.FieldPath != "status.podIP" ||
		c.Env[advertise].Value != "http://$(POD_IP):"+strconv.Itoa(int(c.Ports[0].ContainerPort)) {
		t.Fatalf("advertised address: env %+v", c.Env)
	}
	if svc.Spec.Selector["app.kubernetes.io/component"] != "gateway" || svc.Spec.Ports[0].Port != 8888 {
		t.Fatalf("service %+v", svc.Spec)
	}

	// RBAC: a Role in the namespace, nothing more than the runtime uses.
	if binding.RoleRef.Kind != "Role" || binding.RoleRef.Name != role.Name || binding.Subjects[0].Name != sa.Name {
		t.Fatalf("binding %+v", binding)
	}
	allowed := map[string]bool{}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				if v == "*" || res == "*" {
					t.Fatal("wildcard rule")
				}
				allowed[res+":"+v] = true
			}
		}
	}
	for _, need := range []string{"pods:create", "pods:delete", "pods:watch", "pods:update", "pods/log:get", "secrets:create", "secrets:get", "leases:update"} {
		if !allowed[need] {
			t.Errorf("role lacks %s", need)
		}
	}
	for _, never := range []string{"pods/exec:create", "secrets:watch", "pods/attach:create", "nodes:get"} {
		if allowed[never] {
			t.Errorf("role grants %s", never)
		}
	}

	// Kernel pods: ingress from gateways only, no egress at all.
	kp := policies["glassroom-kernels"]
	if kp.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"] != "kernel" {
		t.Fatal("kernel policy selector")
	}
	if len(kp.Spec.PolicyTypes) != 2 || len(kp.Spec.Egress) != 0 {
		t.Fatalf("kernel egress not denied: %+v", kp.Spec)
	}
	if len(kp.Spec.Ingress) != 1 || len(kp.Spec.Ingress[0].From) != 1 || kp.Spec.Ingress[0].From[0].PodSelector.MatchLabels["app.kubernetes.io/component"] != "gateway" ||
		kp.Spec.Ingress[0].From[0].NamespaceSelector != nil || kp.Spec.Ingress[0].From[0].IPBlock != nil {
		t.Fatalf("kernel ingress %+v", kp.Spec.Ingress)
	}
	ports := kp.Spec.Ingress[0].Ports
	if len(ports) != 1 || ports[0].Port.IntValue() != 8790 { // the agent only: kernels listen on their pod's loopback
		t.Fatalf("kernel ports %+v", ports)
	}
	gp := policies["glassroom-gateway"]
	// Out: kernel agents, the other replicas' API (forwarding), the API
	// server.
	if gp.Spec.Ingress[0].Ports[0].Port.IntValue() != 8888 || len(gp.Spec.Egress) != 3 ||
		gp.Spec.Egress[1].To[0].PodSelector.MatchLabels["app.kubernetes.io/component"] != "gateway" || gp.Spec.Egress[1].Ports[0].Port.IntValue() != 8888 {
		t.Fatalf("gateway policy %+v", gp.Spec)
	}
}

func TestGVisorExample(t *testing.T) {
	var rc *nodev1.RuntimeClass
	var dep *appsv1.Deployment
	for _, o := range build(t, "examples/gvisor") {
		switch o := o.(type) {
		case *nodev1.RuntimeClass:
			rc = o
		case *appsv1.Deployment:
			dep = o
		}
	}
	if rc == nil || rc.Handler != "runsc" {
		t.Fatalf("runtime class %+v", rc)
	}
	if args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--k8s-runtime-class=gvisor") {
		t.Fatalf("args %s", args)
	}
}

func TestSharedSnapshotsExample(t *testing.T) {
	var pvc *corev1.PersistentVolumeClaim
	var dep *appsv1.Deployment
	for _, o := range build(t, "examples/shared-snapshots") {
		switch o := o.(type) {
		case *corev1.PersistentVolumeClaim:
			pvc = o
		case *appsv1.Deployment:
			dep = o
		}
	}
	if pvc == nil || len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany {
		t.Fatalf("claim %+v", pvc)
	}
	ps := dep.Spec.Template.Spec
	for _, v := range ps.Volumes {
		if v.Name == "snapshots" && (v.EmptyDir != nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvc.Name) {
			t.Fatalf("the snapshots volume %+v is not the claim %s", v, pvc.Name)
		}
	}
}
