package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glassroom/glassroom/app"
	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/local"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/snapshots"
	"github.com/glassroom/glassroom/web"
	"github.com/rs/zerolog"
)

const usage = `usage: glassroom serve [flags]
       glassroom mcp [flags]      (MCP server over stdio; glassroom mcp -h)
       glassroom bench [flags]    (load harness; glassroom bench -h)
       glassroom sandboxes [flags] (this host's docker sandboxes, and who owns them; glassroom sandboxes -h)

Runs the gateway. Every flag has an environment twin (GLASSROOM_<NAME>,
upper case, dashes as underscores; GLASSROOM_API_KEYS is comma-separated).
Flags win over the environment.
`

// options is everything the command line and environment configure.
type options struct {
	listen            string
	snapshots         snapshots.Config
	runtime           string
	apiKeys           []string
	logLevel          string
	stateDir          string
	insecureNoSandbox bool
	insecureNoSeccomp bool
	forkServer        bool
	uidBase           int
	dockerImage       string
	dockerRuntime     string
	instance          string
	seccompProfile    string
	memoryBudgetMB    int64
	tenantBudgetMB    int64
	durable           bool
	onShutdown        string
	orphanGrace       time.Duration
	metricsListen     string
	previewListen     string
	previewDomain     string
	metricsToken      string
	urlSigningKey     string
	k8s               k8sOptions
	egressDir         string
	templates         string // --templates: the file of session templates
	egressRateKbps    int64

	sess sessions.Config
	gw   gateway.Config
	lim  sandbox.Limits
	max  sandbox.Limits
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

func parse(args, env []string, stderr io.Writer) (*options, error) {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprint(stderr, usage)
		return nil, errors.New("expected the subcommand serve")
	}
	// Flags start from the packages' own defaults: they live there, once.
	o := &options{sess: sessions.DefaultConfig(), gw: gateway.DefaultConfig(), lim: sandbox.DefaultLimits(), max: sandbox.MaxLimits()}
	o.memoryBudgetMB = o.sess.MemoryBudget >> 20
	egressDefaults := egress.DefaultConfig()
	o.sess.Egress.MaxConns = egressDefaults.MaxConns
	o.sess.Egress.IdleTimeout = egressDefaults.IdleTimeout
	o.sess.Egress.MaxConnDuration = egressDefaults.MaxConnDuration
	o.egressRateKbps = egressDefaults.RateBytes * 8 / 1000
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var keys stringList
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8888", "address to serve on (loopback by default)")
	fs.StringVar(&o.runtime, "runtime", "local", "kernel runtime: local (bubblewrap), docker, or k8s (a pod per session)")
	fs.Var(&keys, "api-key", "API key (repeatable); each key is a tenant. Env: GLASSROOM_API_KEYS, comma-separated")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.stateDir, "state-dir", "", "directory for per-session sandbox state, one gateway per directory (default /run/glassroom/<runtime> as root)")
	fs.IntVar(&o.uidBase, "uid-base", 0, "first host uid of sandboxes when running as root, one uid per session (default 200000 local, 300000 docker); the range is claimed host-wide, and a gateway refuses to start on uids another live gateway claimed")
	fs.BoolVar(&o.insecureNoSandbox, "insecure-no-sandbox", false, "INSECURE: run local kernels without bubblewrap")
	fs.BoolVar(&o.forkServer, "fork-server", true, "local runtime: fork python3 kernels from a template that has loaded ipykernel and --pool-preload's modules (as root with bubblewrap); false: every kernel starts its own interpreter")
	fs.BoolVar(&o.insecureNoSeccomp, "insecure-no-seccomp", false, "INSECURE: run local kernels without a seccomp filter on a CPU architecture glassroom has none for (only amd64 and arm64 have one); without it the local runtime refuses to start there")
	fs.StringVar(&o.dockerImage, "docker-image", "glassroom/python-kernel:latest", "kernel image for the docker runtime")
	fs.StringVar(&o.dockerRuntime, "docker-runtime", "runc", "OCI runtime for kernel containers (runc, runsc, kata)")
	fs.StringVar(&o.instance, "instance", "default", "name of this gateway in container names and labels (docker)")
	fs.BoolVar(&o.durable, "durable", true, "keep sessions in a store under the state dir, and adopt them (docker: kernels, variables and files) when the gateway starts again")
	fs.StringVar(&o.onShutdown, "on-shutdown", "keep", "on SIGTERM: keep (kernels that can outlive the gateway keep running, for the next one to adopt: a docker kernel until its session's end or --orphan-grace, whichever comes first) or stop (every kernel)")
	fs.DurationVar(&o.orphanGrace, "orphan-grace", 0, "how long a kernel runs on once no gateway holds it (docker: after the detach, or its gateway's death, it ends itself by then or at its session's end; k8s: other replicas delete it unadopted); 0: the runtime's default (docker 2h, k8s 10m)")
	fs.StringVar(&o.metricsListen, "metrics-listen", "", "serve Prometheus /metrics on this separate address, without auth (e.g. 127.0.0.1:9464)")
	fs.StringVar(&o.previewListen, "preview-listen", "", "serve previews of the sandboxes' servers on this separate address (e.g. 127.0.0.1:8890); each preview is the origin {port}-{session}.<preview-domain>")
	fs.StringVar(&o.previewDomain, "preview-domain", "", "the previews' domain as browsers reach it, [https://]domain[:port]: another site than the gateway's (default localhost:<port of --preview-listen>, which browsers resolve to loopback)")
	fs.StringVar(&o.metricsToken, "metrics-token", "", "serve Prometheus /metrics on the main listener to requests bearing this token")
	fs.StringVar(&o.urlSigningKey, "url-signing-key", "", "the secret that seals signed file and preview URLs (at least 32 characters; replicas must share it); default: a random key kept in the state dir (url-signing.key), or of this process without --durable")
	fs.StringVar(&o.seccompProfile, "seccomp-profile", "", "seccomp JSON profile for kernel containers (default: glassroom's, stricter than Docker's; docker-default: Docker's)")
	fs.StringVar(&o.snapshots.Dir, "snapshot-dir", "", "directory of the tenants' session snapshots (default <state-dir>/snapshots); replicas that share one (a volume they all mount) restore each other's")
	snapMB := fs.Int64("snapshot-max-mb", 1024, "largest snapshot (its workspace archive with its kernels' state), MiB")
	snapTenantMB := fs.Int64("snapshot-tenant-mb", 4096, "what all of one API key's snapshots may hold together, MiB")
	o.k8s.flags(fs)
	fs.DurationVar(&o.sess.ExecTimeout, "exec-timeout", o.sess.ExecTimeout, "default execution timeout")
	fs.DurationVar(&o.sess.MaxExecTimeout, "max-exec-timeout", o.sess.MaxExecTimeout, "largest execution timeout a request may ask for")
	fs.DurationVar(&o.sess.IdleTimeout, "idle-timeout", o.sess.IdleTimeout, "delete sessions idle for this long")
	fs.DurationVar(&o.sess.PauseAfter, "pause-after", 5*time.Minute, "freeze a session's kernel (docker pause, cgroup freezer) once unused this long; the next request thaws it (0: never)")
	fs.DurationVar(&o.sess.MaxLifetime, "max-lifetime", o.sess.MaxLifetime, "delete sessions this long after creation")
	fs.IntVar(&o.sess.MaxSessions, "max-sessions", o.sess.MaxSessions, "sessions in total")
	fs.IntVar(&o.sess.MaxSessionsPerTenant, "max-sessions-per-key", o.sess.MaxSessionsPerTenant, "sessions per API key")
	fs.IntVar(&o.sess.ExecSlots, "exec-slots", o.sess.ExecSlots, "executions running at once, gateway-wide; the rest wait their turn, first come first served (negative: no limit)")
	fs.IntVar(&o.sess.Pool, "pool", o.sess.Pool, "pre-started kernels kept ready for sessions with default settings (0: none)")
	poolPreload := fs.String("pool-preload", "numpy,pandas,matplotlib.pyplot", "Python modules each pooled kernel imports before a session takes it, comma-separated (\"\": none); the session's namespace stays empty")
	fs.IntVar(&o.sess.MaxConcurrentStarts, "max-concurrent-starts", o.sess.MaxConcurrentStarts, "kernels starting at once; more creations wait their turn")
	fs.IntVar(&o.sess.MaxStreamBytes, "max-stream-bytes", o.sess.MaxStreamBytes, "stdout+stderr kept per execution")
	fs.IntVar(&o.sess.MaxRichBytes, "max-rich-bytes", o.sess.MaxRichBytes, "rich output kept per execution")
	fs.Int64Var(&o.memoryBudgetMB, "memory-budget-mb", o.memoryBudgetMB, "output the gateway keeps for clients, all sessions together (MiB)")
	fs.Int64Var(&o.tenantBudgetMB, "memory-budget-tenant-mb", 0, "the most of --memory-budget-mb one tenant's sessions hold (MiB; 0: the budget × --max-sessions-per-key / --max-sessions)")
	fs.Int64Var(&o.gw.MaxBodyBytes, "max-body-bytes", o.gw.MaxBodyBytes, "largest JSON request body")
	fs.Int64Var(&o.gw.MaxUploadBytes, "max-upload-bytes", o.gw.MaxUploadBytes, "largest file upload")
	fs.Int64Var(&o.gw.WSLargeFrameBudget, "ws-large-frame-budget", o.gw.WSLargeFrameBudget, "bytes of WebSocket frames above the code limit (large comm messages) all connections may hold at once")
	fs.IntVar(&o.lim.MemoryMB, "memory-mb", o.lim.MemoryMB, "default kernel memory (MB)")
	fs.IntVar(&o.max.MemoryMB, "max-memory-mb", o.max.MemoryMB, "largest kernel memory a session may ask for (MB)")
	fs.IntVar(&o.lim.Pids, "pids", o.lim.Pids, "default process/thread limit (under --docker-runtime runsc at most 48, and memory-mb/40)")
	fs.IntVar(&o.max.Pids, "max-pids", o.max.Pids, "largest process limit a session may ask for")
	fs.Float64Var(&o.lim.CPUs, "cpus", o.lim.CPUs, "default CPU quota in cores")
	fs.Float64Var(&o.max.CPUs, "max-cpus", o.max.CPUs, "largest CPU quota a session may ask for")
	fs.IntVar(&o.lim.WorkspaceMB, "workspace-mb", o.lim.WorkspaceMB, "default workspace size (MB)")
	fs.IntVar(&o.max.WorkspaceMB, "max-workspace-mb", o.max.WorkspaceMB, "largest workspace a session may ask for (MB)")
	var kernelList stringList
	fs.Var(&kernelList, "kernels", "the only kernels to offer (repeatable, comma-separated names or aliases: python3,r,javascript,typescript,bash,java; python3 among them); default every kernel the runtime has")
	var egressAllow, egressPrivate, egressAddress stringList
	fs.Var(&egressAllow, "egress-allow", "host pattern a session may ask to reach (repeatable, comma-separated: pypi.org, *.pythonhosted.org, api.example.com:443); none: sessions get no network")
	fs.Var(&egressPrivate, "egress-allow-private", "non-public range the egress proxy may dial all the same (repeatable CIDRs, e.g. 10.1.2.0/24); it does not open the gateway host's own addresses (but loopback) nor cloud metadata addresses; default none")
	fs.Var(&egressAddress, "egress-allow-address", "address the egress proxy may dial even though it is the gateway host's own, a cloud provider's service address (metadata, Azure's 168.63.129.16, ...) or non-public (repeatable CIDRs); default none")
	fs.DurationVar(&o.sess.Egress.IdleTimeout, "egress-idle-timeout", o.sess.Egress.IdleTimeout, "close an egress connection no byte crossed, either way, for this long")
	fs.DurationVar(&o.sess.Egress.MaxConnDuration, "egress-max-conn-duration", o.sess.Egress.MaxConnDuration, "close an egress connection this long after it was opened, however busy")
	fs.Int64Var(&o.egressRateKbps, "egress-rate-kbps", o.egressRateKbps, "egress bandwidth per session, each direction (kbit/s)")
	fs.IntVar(&o.sess.Egress.MaxConns, "egress-max-conns", o.sess.Egress.MaxConns, "open egress connections per session")
	fs.StringVar(&o.templates, "templates", "", `JSON file of session templates, {"name": {"language", "limits", "network": {"allow"}, "idle_timeout_s", "env", "description"}}, added to the built-in "default" and "code-interpreter-v1" (POST /v1/sessions "template"; GET /v1/templates)`)
	fs.StringVar(&o.egressDir, "egress-dir", "", "directory of the sessions' egress proxy sockets (default <state-dir>/egress with --state-dir, else "+egressDefaults.Dir+")")

	// Environment first, so explicit flags override it.
	envMap := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envMap[k] = v
		}
	}
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := "GLASSROOM_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if f.Name == "api-key" {
			name = "GLASSROOM_API_KEYS"
		}
		if v, ok := envMap[name]; ok && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s: %w", name, err)
			}
		}
	})
	if envErr != nil {
		return nil, envErr
	}
	envKeys, envAllow, envPrivate, envAddress := keys, egressAllow, egressPrivate, egressAddress
	keys, egressAllow, egressPrivate, egressAddress = nil, nil, nil, nil
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	o.sess.Kernels = kernelList
	var preload stringList // the list as given, "" for none
	_ = preload.Set(*poolPreload)
	o.sess.PoolPreload = preload
	if *snapMB < 1 || *snapTenantMB < *snapMB || *snapTenantMB > 1<<30 {
		return nil, errors.New("--snapshot-max-mb must be positive, and --snapshot-tenant-mb at least as large")
	}
	o.snapshots.MaxBytes, o.snapshots.TenantBytes = *snapMB<<20, *snapTenantMB<<20
	if len(keys) == 0 {
		keys = envKeys
	}
	if len(egressAllow) == 0 {
		egressAllow = envAllow
	}
	if len(egressPrivate) == 0 {
		egressPrivate = envPrivate
	}
	if len(egressAddress) == 0 {
		egressAddress = envAddress
	}
	if err := o.setEgress(egressAllow, egressPrivate, egressAddress); err != nil {
		return nil, err
	}
	o.apiKeys = keys
	o.sess.MemoryBudget = o.memoryBudgetMB << 20
	o.sess.MemoryBudgetPerTenant = o.tenantBudgetMB << 20
	if o.onShutdown != "keep" && o.onShutdown != "stop" {
		return nil, fmt.Errorf("--on-shutdown %q: want keep or stop", o.onShutdown)
	}
	if o.orphanGrace != 0 && o.orphanGrace < time.Second {
		return nil, fmt.Errorf("--orphan-grace %v: want at least 1s (or 0 for the runtime's default)", o.orphanGrace)
	}
	if o.previewDomain != "" && o.previewListen == "" {
		return nil, errors.New("--preview-domain needs --preview-listen")
	}
	if o.metricsToken != "" && len(o.metricsToken) < 16 {
		return nil, errors.New("--metrics-token must be at least 16 characters")
	}
	if o.urlSigningKey != "" && len(o.urlSigningKey) < 32 {
		return nil, errors.New("--url-signing-key must be at least 32 characters")
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.templates != "" {
		t, err := sessions.LoadTemplates(o.templates)
		if err != nil {
			return nil, fmt.Errorf("--templates: %w", err)
		}
		o.sess.Templates = t
	}
	return o, nil
}

// setEgress checks the egress flags and fills o.sess.Egress.
func (o *options) setEgress(allow, private, addresses []string) error {
	if _, err := egress.ParsePolicy(allow); err != nil {
		var pe *egress.PatternError
		if errors.As(err, &pe) {
			return fmt.Errorf("--egress-allow %q: %s", pe.Pattern, pe.Reason)
		}
		return fmt.Errorf("--egress-allow: %w", err)
	}
	if len(allow) > 0 && o.runtime == "k8s" {
		return errors.New("--egress-allow: not available with --runtime k8s (kernel pods cannot reach the gateway's per-session proxy; open destinations with a NetworkPolicy egress rule instead)")
	}
	o.sess.Egress.Allow = allow
	var err error
	if o.sess.Egress.AllowPrivate, err = parsePrefixes("--egress-allow-private", private); err != nil {
		return err
	}
	if o.sess.Egress.AllowAddress, err = parsePrefixes("--egress-allow-address", addresses); err != nil {
		return err
	}
	if o.sess.Egress.IdleTimeout <= 0 || o.sess.Egress.MaxConnDuration <= 0 {
		return errors.New("--egress-idle-timeout and --egress-max-conn-duration must be positive")
	}
	if o.egressRateKbps < 1 || o.egressRateKbps > 1<<40 {
		return errors.New("--egress-rate-kbps must be positive")
	}
	o.sess.Egress.RateBytes = o.egressRateKbps * 1000 / 8
	o.sess.Egress.Dir = o.egressDir
	if o.egressDir == "" && o.stateDir != "" {
		o.sess.Egress.Dir = filepath.Join(o.stateDir, "egress")
	}
	return nil
}

// parsePrefixes reads CIDRs (or single addresses) given to flag.
func parsePrefixes(flag string, list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%s %q: want a CIDR such as 10.1.2.0/24", flag, s)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newKey() string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// run is the whole program: parse, build, serve until ctx ends, shut down.
func run(ctx context.Context, args, env []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "mcp" {
		return runMCP(ctx, args[1:], env, os.Stdin, stdout)
	}
	if len(args) > 0 && args[0] == "bench" {
		return runBench(ctx, args[1:], env, stdout)
	}
	if len(args) > 0 && args[0] == "pod-agent" {
		return runPodAgent(ctx, args[1:], stdout)
	}
	if len(args) > 0 && args[0] == "seccomp-profile" {
		return writeSeccompProfile(args[1:], stdout)
	}
	if len(args) > 0 && args[0] == "sandboxes" {
		return runSandboxes(ctx, args[1:], stdout)
	}
	o, err := parse(args, env, stdout)
	if err != nil {
		return err
	}
	level, err := zerolog.ParseLevel(o.logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := zerolog.New(os.Stderr).Level(level).With().Timestamp().Logger()
	protectFromOOMKiller(log)

	if len(o.apiKeys) == 0 {
		if !isLoopback(o.listen) {
			return errors.New("refusing to serve on a non-loopback address without --api-key (or GLASSROOM_API_KEYS)")
		}
		o.apiKeys = []string{newKey()}
		fmt.Fprintf(stdout, "glassroom: no API key configured; generated one for this run:\n    %s\n", o.apiKeys[0])
	}

	assets, err := web.Assets()
	if err != nil {
		return err
	}
	cfg := o.appConfig()
	cfg.Durable, cfg.UI, cfg.MetricsListen = o.durable, assets, o.metricsListen
	if cfg.PreviewListen = o.previewListen; o.previewListen != "" {
		cfg.Gateway.PreviewBase = previewBase(o.previewListen, o.previewDomain)
	}
	cfg.Gateway.MetricsToken = o.metricsToken
	if o.urlSigningKey != "" {
		cfg.Gateway.URLSigningKey = []byte(o.urlSigningKey)
	}
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return withFlagHint(err, "--state-dir DIR (or GLASSROOM_STATE_DIR)")
	}
	if res := a.Restored; res.Adopted+res.Restarted+res.Lost > 0 {
		log.Info().Int("adopted", res.Adopted).Int("restarted", res.Restarted).Int("lost", res.Lost).Msg("sessions of the previous gateway")
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return errors.Join(fmt.Errorf("listen: %w", err), a.Close(cctx, o.onShutdown == "keep"))
	}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "glassroom: serving on %s (runtime %s)\n    open %s/?token=%s\n", url, a.Runtime.Name(), url, o.apiKeys[0])
	if cfg.Gateway.PreviewBase != "" {
		fmt.Fprintf(stdout, "glassroom: previews of the sandboxes' servers on %s (as {port}-{session}.%s)\n", o.previewListen, strings.SplitN(cfg.Gateway.PreviewBase, "://", 2)[1])
	}

	err = a.Run(ctx, ln)
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o.onShutdown == "keep" {
		log.Info().Msg("letting kernels that outlive the gateway run on, for the next gateway (docker: until their session's end or --orphan-grace); stopping the others")
	} else {
		log.Info().Msg("stopping every kernel")
	}
	if cerr := a.Close(cctx, o.onShutdown == "keep"); cerr != nil && err == nil {
		err = cerr
	}
	fmt.Fprintln(stdout, "glassroom: stopped")
	return err
}

// appConfig is the assembly the options describe: runtime, sessions and
// gateway (API keys included); serve and the embedded MCP gateway add
// what is theirs.
func (o *options) appConfig() app.Config {
	gw := o.gw
	gw.APIKeys, gw.Instance = o.apiKeys, o.instance
	k8sCfg := o.k8s.config(o.instance)
	k8sCfg.OrphanGrace = o.orphanGrace
	return app.Config{
		Runtime: app.Runtime{
			Kind:   o.runtime,
			Common: sandbox.Common{StateDir: o.stateDir, UIDBase: o.uidBase, Defaults: o.lim, Max: o.max},
			Local: local.Config{InsecureNoSandbox: o.insecureNoSandbox, InsecureNoSeccomp: o.insecureNoSeccomp,
				Fork: local.ForkConfig{Disabled: !o.forkServer}},
			Docker: docker.Config{Image: o.dockerImage, OCIRuntime: o.dockerRuntime, Instance: o.instance,
				SeccompProfile: o.seccompProfile, Adopting: o.durable, OrphanGrace: o.orphanGrace},
			K8s: k8sCfg,
		},
		Sessions:  o.sess,
		Gateway:   gw,
		Snapshots: o.snapshots,
	}
}

// withFlagHint adds to a start-up error the flag that answers it: for a
// state directory another gateway holds, how to give this one its own
// (stateDirFlag); for an architecture without a seccomp filter, the
// insecure flag that runs without one.
func withFlagHint(err error, stateDirFlag string) error {
	var inUse *sandbox.StateDirInUseError
	switch {
	case errors.As(err, &inUse):
		return fmt.Errorf("%w; one gateway per state directory: give this one another with %s", err, stateDirFlag)
	case errors.Is(err, local.ErrNoSeccomp):
		return fmt.Errorf("%w; the flag is --insecure-no-seccomp", err)
	}
	return err
}

// protectFromOOMKiller makes the gateway the OOM killer's last choice
// (kernels ask to be its first): one runaway sandbox must never cost every
// tenant their gateway. Lowering the score needs root; without it the
// gateway keeps the default.
func protectFromOOMKiller(log zerolog.Logger) {
	if os.Geteuid() != 0 {
		return
	}
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("-900"), 0); err != nil {
		log.Warn().Err(err).Msg("could not lower the gateway's OOM score")
	}
}

// previewBase is the preview origin's base URL: domain as given (http://
// when it names no scheme), or localhost on listen's port.
func previewBase(listen, domain string) string {
	if domain == "" {
		_, port, _ := net.SplitHostPort(listen)
		domain = "localhost:" + port
	}
	if !strings.Contains(domain, "://") {
		domain = "http://" + domain
	}
	return domain
}
