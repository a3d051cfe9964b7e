package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/k8s"
	"github.com/glassroom/glassroom/kernel/runtime/local"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"
)

// The runtimes Runtime.Kind names.
const (
	KindLocal  = "local"
	KindDocker = "docker"
	KindK8s    = "k8s"
)

// Runtime selects and configures the kernel runtime. Common is given to
// whichever runtime Kind names (its own Common fields are ignored).
type Runtime struct {
	// Kind is local (bubblewrap, the default), docker or k8s.
	Kind   string
	Common sandbox.Common
	Local  local.Config
	Docker docker.Config
	K8s    K8s
}

// K8s is the k8s runtime's configuration and how to reach the cluster.
type K8s struct {
	k8s.Config
	// Kubeconfig is the cluster's kubeconfig file; "" means in-cluster,
	// else KUBECONFIG or ~/.kube/config.
	Kubeconfig string
	// Clientset, when set, is used instead of Kubeconfig (tests give a
	// fake API server).
	Clientset kubernetes.Interface
}

// builtRuntime is a runtime with its periodic loop and its release.
type builtRuntime struct {
	runtime sessions.Runtime
	loop    func(context.Context) error
	release func()
}

func newRuntime(ctx context.Context, cfg Runtime, scfg sessions.Config, log zerolog.Logger) (builtRuntime, error) {
	noLoop := func(context.Context) error { return nil }
	switch cfg.Kind {
	case "", KindLocal:
		lc := cfg.Local
		lc.Common = cfg.Common
		if lc.Fork.Preload == nil { // the template imports what pooled kernels do
			lc.Fork.Preload = scfg.PoolPreload
		}
		rt, err := local.New(lc, log)
		if err != nil {
			return builtRuntime{}, fmt.Errorf("app: local runtime: %w", err)
		}
		if lc.InsecureNoSandbox {
			log.Warn().Msg("INSECURE: kernels run without a sandbox (--insecure-no-sandbox)")
		}
		return builtRuntime{rt, noLoop, func() { _ = rt.Close() }}, nil
	case KindDocker:
		dc := cfg.Docker
		dc.Common = cfg.Common
		rt, err := docker.New(ctx, dc, log)
		if err != nil {
			return builtRuntime{}, fmt.Errorf("app: docker runtime: %w", err)
		}
		return builtRuntime{rt, rt.Run, func() { _ = rt.Close() }}, nil
	case KindK8s:
		kc := cfg.K8s.Config
		kc.Common = cfg.Common
		if kc.MaxLifetime == 0 {
			kc.MaxLifetime = scfg.MaxLifetime
		}
		cs := cfg.K8s.Clientset
		if cs == nil {
			var err error
			if cs, err = k8s.NewClientset(cfg.K8s.Kubeconfig); err != nil {
				return builtRuntime{}, fmt.Errorf("app: k8s runtime: %w", err)
			}
		}
		if kc.Namespace == "" {
			kc.Namespace = strings.TrimSpace(k8s.InClusterNamespace())
		}
		rt, err := k8s.New(ctx, kc, cs, log)
		if err != nil {
			return builtRuntime{}, fmt.Errorf("app: k8s runtime: %w", err)
		}
		release := func() { // sessions are closed or detached by now: others may adopt what is left at once
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := rt.ReleaseLease(cctx); err != nil {
				log.Warn().Err(err).Msg("releasing the gateway's lease failed")
			}
			_ = rt.Close()
		}
		return builtRuntime{rt, rt.Run, release}, nil
	}
	return builtRuntime{}, fmt.Errorf("app: runtime %s: unknown (want local, docker or k8s)", strconv.Quote(cfg.Kind))
}
