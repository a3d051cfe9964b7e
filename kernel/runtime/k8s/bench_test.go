package k8s

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// roundTrips runs `x + 1` b.N times on c.
func roundTrips(b *testing.B, c *kernel.Client) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := c.Execute(ctx, "x = 1", kernel.ExecuteOptions{}, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if r, err := c.Execute(ctx, "x + 1", kernel.ExecuteOptions{}, nil); err != nil || r.Status != "ok" {
			b.Fatalf("%v %+v", err, r)
		}
	}
}

// BenchmarkChannelRelay measures what the kernel channels' path through
// the pod agent costs per `x + 1`: the same kernel (under the simulated
// kubelet, whose pods' kernels listen on their own 127.0.0.x) reached
// through the relay (a unix socket, a TLS tunnel to the agent, the agent's
// connection to the kernel's port) and directly on its port.
func BenchmarkChannelRelay(b *testing.B) {
	cs := newClientset()
	startKubelet(b, cs, ns)
	rt := newRuntime(b, cs, testConfig("gw-bench"))
	k := runtimetest.Start(b, rt, sandbox.Spec{ID: "bench-relay-0001"})
	pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), PodName("bench-relay-0001"), metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("relay", func(b *testing.B) { roundTrips(b, k.Client) })
	b.Run("direct", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		direct, err := kernel.Dial(ctx, rt.cfg.connection(pod.Status.PodIP, k.Sandbox.Connection().Key), kernel.Config{}, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		defer direct.Close()
		roundTrips(b, direct)
	})
}

// BenchmarkRealClusterStart: pod creation to the first result of `1 + 1`
// on the real cluster (scripts/kube-up.sh), images already on the node.
func BenchmarkRealClusterStart(b *testing.B) {
	cs, namespace := realCluster(b)
	rt := newClusterRuntime(b, cs, clusterConfig(namespace, "gw-bench"))
	for i := range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		sb, err := rt.Start(ctx, sandbox.Spec{ID: "bench-start-" + strconv.Itoa(i)})
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		c, err := kernel.Dial(ctx, sb.Connection(), kernel.Config{}, zerolog.Nop())
		if err == nil {
			var r *kernel.ExecuteReply
			r, err = c.Execute(ctx, "1 + 1", kernel.ExecuteOptions{}, nil)
			if err == nil && r.Status != "ok" {
				b.Errorf("reply %+v", r)
			}
			c.Close()
		}
		b.StopTimer()
		_ = sb.Close(context.Background())
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkRealClusterExecute: `x + 1` on a real cluster's kernel pod of
// one core, through the agent's encrypted channels.
func BenchmarkRealClusterExecute(b *testing.B) {
	cs, namespace := realCluster(b)
	rt := newClusterRuntime(b, cs, clusterConfig(namespace, "gw-bench"))
	k := runtimetest.Start(b, rt, sandbox.Spec{ID: "bench-exec-0001", Limits: sandbox.Limits{CPUs: 1}})
	roundTrips(b, k.Client)
}
