package k8s

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
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
// kubelet) reached through the relay (a unix socket, a TLS tunnel to the
// agent, the agent's connection to the kernel's socket) and directly on
// its sockets.
func BenchmarkChannelRelay(b *testing.B) {
	cs := newClientset()
	kubelet := startKubelet(b, cs, ns)
	rt := newRuntime(b, cs, testConfig("gw-bench"))
	k := runtimetest.Start(b, rt, sandbox.Spec{ID: "bench-relay-0001"})
	b.Run("relay", func(b *testing.B) { roundTrips(b, k.Client) })
	b.Run("direct", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		direct, err := kernel.Dial(ctx, kubelet.connection(PodName("bench-relay-0001"), k.Sandbox.Connection().Key), kernel.Config{}, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		defer direct.Close()
		roundTrips(b, direct)
	})
}

// BenchmarkRealClusterStart: pod creation to the first result of each
// kernel's Hello on the real cluster (scripts/kube-up.sh), images already
// on the node, pods of one core.
func BenchmarkRealClusterStart(b *testing.B) {
	cs, namespace := realCluster(b)
	rt := newClusterRuntime(b, cs, clusterConfig(namespace, "gw-bench"))
	seq := 0 // ids are never reused: a closed pod may still be terminating
	for _, k := range kernels.All() {
		b.Run(k.Name, func(b *testing.B) {
			for range b.N {
				seq++
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				sb, err := rt.Start(ctx, sandbox.Spec{ID: "bench-start-" + k.Name + "-" + strconv.Itoa(seq), Kernel: k.Name, Limits: sandbox.Limits{CPUs: 1}})
				if err != nil {
					cancel()
					b.Fatal(err)
				}
				err = hello(ctx, sb, k.Hello)
				b.StopTimer()
				_ = sb.Close(context.Background())
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// hello runs code on sb's kernel and checks that it printed 42.
func hello(ctx context.Context, sb sandbox.Sandbox, code string) error {
	c, err := kernel.Dial(ctx, sb.Connection(), kernel.Config{}, zerolog.Nop())
	if err != nil {
		return err
	}
	defer c.Close()
	var out strings.Builder
	r, err := c.Execute(ctx, code, kernel.ExecuteOptions{}, func(ev kernel.Event) {
		if ev.Kind == kernel.EventStream {
			out.WriteString(ev.Text)
		}
	})
	if err == nil && (r.Status != "ok" || strings.TrimSpace(out.String()) != "42") {
		err = fmt.Errorf("reply %+v, output %q", r, out.String())
	}
	return err
}

// BenchmarkRealClusterContext: a context's first result, each kernel's
// Hello, in a running pod of one core (the supervisor starts the kernel;
// its channels come through the agent).
func BenchmarkRealClusterContext(b *testing.B) {
	cs, namespace := realCluster(b)
	rt := newClusterRuntime(b, cs, clusterConfig(namespace, "gw-bench"))
	k := runtimetest.Start(b, rt, sandbox.Spec{ID: "bench-context-0001", Limits: sandbox.Limits{CPUs: 1, MemoryMB: 4096}})
	seq := 0
	for _, kd := range kernels.All() {
		b.Run(kd.Name, func(b *testing.B) {
			for range b.N {
				seq++
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				cx, err := k.Sandbox.(sandbox.ContextStarter).StartContext(ctx, sandbox.ContextSpec{Name: kd.Name + "-" + strconv.Itoa(seq), Kernel: kd.Name})
				if err == nil {
					err = hello(ctx, cx, kd.Hello)
				}
				b.StopTimer()
				if cx != nil {
					_ = cx.Close(context.Background())
				}
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkRealClusterCommand: a command's round trip (`true`, from the
// request to its exit status) through the pod's agent and supervisor.
func BenchmarkRealClusterCommand(b *testing.B) {
	cs, namespace := realCluster(b)
	rt := newClusterRuntime(b, cs, clusterConfig(namespace, "gw-bench"))
	k := runtimetest.Start(b, rt, sandbox.Spec{ID: "bench-command-0001", Limits: sandbox.Limits{CPUs: 1}})
	b.ResetTimer()
	for range b.N {
		if r := runtimetest.RunCommand(b, k.Sandbox, sandbox.CommandSpec{Cmd: "true"}, ""); r.Exit.Code != 0 {
			b.Fatalf("%+v", r)
		}
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
