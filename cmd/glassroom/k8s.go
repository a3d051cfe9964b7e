package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	"github.com/glassroom/glassroom/app"
	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/k8s"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
)

// k8sOptions are the flags of --runtime k8s.
type k8sOptions struct {
	namespace      string
	kubeconfig     string
	kernelImage    string
	agentImage     string
	pullPolicy     string
	runtimeClass   string
	seccompProfile string
	workspaceMedia string
	advertiseURL   string
	cpuRequest     float64
}

func (k *k8sOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&k.namespace, "k8s-namespace", "", "namespace of kernel pods (default: the gateway pod's own, else default)")
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file for --runtime k8s (default: in-cluster, else KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&k.kernelImage, "k8s-kernel-image", "glassroom/python-kernel:latest", "kernel image of kernel pods")
	fs.StringVar(&k.agentImage, "k8s-agent-image", "glassroom/gateway:latest", "image running `glassroom pod-agent` in kernel pods (the gateway's own)")
	fs.StringVar(&k.pullPolicy, "k8s-image-pull-policy", "IfNotPresent", "image pull policy of kernel pods: Always, IfNotPresent, Never")
	fs.StringVar(&k.runtimeClass, "k8s-runtime-class", "", "RuntimeClass of kernel pods (gvisor, kata); default: the node's")
	fs.StringVar(&k.seccompProfile, "k8s-seccomp-profile", "", "Localhost seccomp profile of kernel pods (a path relative to the kubelet's seccomp dir); default RuntimeDefault")
	fs.StringVar(&k.workspaceMedia, "k8s-workspace-medium", "", "workspace emptyDir medium: empty (node disk, sizeLimit enforced by eviction) or Memory (tmpfs)")
	fs.StringVar(&k.advertiseURL, "k8s-advertise-url", "", "where other gateway replicas reach this one's API (http://<pod IP>:8080): they forward requests for its sessions there; empty for one replica")
	fs.Float64Var(&k.cpuRequest, "k8s-cpu-request-ratio", 1, "share of a kernel pod's CPU limit it requests (1: Guaranteed QoS; lower packs more idle sessions on a node)")
}

// config is the k8s runtime these flags describe (app fills in the
// shared limits and state).
func (k *k8sOptions) config(instance string) app.K8s {
	return app.K8s{Kubeconfig: k.kubeconfig, Config: k8s.Config{Namespace: k.namespace, Instance: instance,
		Image: k.kernelImage, AgentImage: k.agentImage, ImagePullPolicy: k.pullPolicy,
		RuntimeClassName: k.runtimeClass, SeccompLocalhostProfile: k.seccompProfile,
		WorkspaceMedium: k.workspaceMedia, AdvertiseURL: k.advertiseURL, CPURequestRatio: k.cpuRequest}}
}

// runPodAgent is `glassroom pod-agent`: the agent next to the kernel in
// its pod (kernel/runtime/k8s ServeAgent), serving until ctx ends.
func runPodAgent(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("pod-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", ":8790", "address to serve on")
	var cfg k8s.AgentConfig
	var tokenFile string
	var quotaMB int64
	fs.StringVar(&cfg.Workspace, "workspace", sandbox.WorkDir, "the workspace directory")
	fs.StringVar(&tokenFile, "token-file", k8s.AgentTokenFile, "file holding the bearer token")
	fs.StringVar(&cfg.Control, "control", k8s.ControlFile, "the supervisor's control file")
	fs.StringVar(&cfg.Status, "status", k8s.StatusFile, "the supervisor's status file")
	fs.Int64Var(&quotaMB, "quota-mb", 0, "uploads may fill the workspace up to this (MiB; 0: no quota)")
	certFile := fs.String("tls-cert", k8s.AgentCertFile, "the agent's TLS certificate (PEM)")
	keyFile := fs.String("tls-key", k8s.AgentKeyFile, "the agent's TLS key (PEM)")
	fs.StringVar(&cfg.KernelIPC, "kernel-ipc", "", "the socket prefix of the kernel's ipc connection file (its channels are PREFIX-1 to PREFIX-5)")
	fs.StringVar(&cfg.ContextsDir, "contexts", "", "the directory of the contexts' ipc directories (\"\": no contexts)")
	fs.StringVar(&cfg.FenceFile, "fence", "", "where the agent keeps the highest gateway epoch it has seen (\"\": in memory)")
	fs.StringVar(&cfg.Spawn, "spawn", "", "the supervisor's spawn socket (\"\": no contexts and no commands)")
	kernelPorts := fs.String("kernel-ports", "50001,50002,50003,50004,50005", "without --kernel-ipc (a pod from before it): the kernel's shell, iopub, stdin, control and heartbeat ports on the pod's loopback")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, p := range strings.Split(*kernelPorts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("pod-agent: --kernel-ports: %q", p)
		}
		cfg.KernelPorts = append(cfg.KernelPorts, n)
	}
	certPEM, err := os.ReadFile(*certFile)
	if err != nil {
		return fmt.Errorf("pod-agent: %w", err)
	}
	keyPEM, err := os.ReadFile(*keyFile)
	if err != nil {
		return fmt.Errorf("pod-agent: %w", err)
	}
	if cfg.TLS, err = k8s.AgentServerTLS(certPEM, keyPEM); err != nil {
		return fmt.Errorf("pod-agent: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("pod-agent: unexpected arguments: %v", fs.Args())
	}
	if quotaMB < 0 {
		return errors.New("pod-agent: negative --quota-mb")
	}
	cfg.QuotaBytes = quotaMB << 20
	tok, err := k8s.ReadAgentToken(tokenFile)
	if err != nil {
		return err
	}
	cfg.Token = tok
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("pod-agent: %w", err)
	}
	log := zerolog.New(os.Stderr).With().Timestamp().Str("component", "pod-agent").Logger()
	log.Info().Str("listen", ln.Addr().String()).Msg("serving")
	return k8s.ServeAgent(ctx, cfg, ln, log)
}

// writeSeccompProfile prints glassroom's kernel seccomp profile in the OCI
// form a Kubernetes Localhost profile needs (docker.OCISeccompProfile), for
// this machine's architecture or --arch: `glassroom seccomp-profile >
// /var/lib/kubelet/seccomp/glassroom-kernel.json` on each node, then
// --k8s-seccomp-profile glassroom-kernel.json.
func writeSeccompProfile(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("seccomp-profile", flag.ContinueOnError)
	fs.SetOutput(stdout)
	arch := fs.String("arch", goruntime.GOARCH, "architecture of the nodes (amd64 or arm64)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := docker.OCISeccompProfile(*arch)
	if err != nil {
		return err
	}
	_, err = stdout.Write(append(b, '\n'))
	return err
}
