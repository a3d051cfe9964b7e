package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/glassroom/glassroom/cleanup"
	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/mcp"
	"github.com/glassroom/glassroom/metrics"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessionstore"
	"github.com/glassroom/glassroom/snapshots"
	"github.com/glassroom/glassroom/volumes"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
)

// Config is everything an assembled gateway needs. Zero fields take the
// packages' own defaults.
type Config struct {
	// Runtime selects and configures the kernel runtime.
	Runtime Runtime
	// Sessions configures the session manager. Store and Observer are
	// filled in here (from Durable and the metrics).
	Sessions sessions.Config
	// Gateway configures the HTTP server. MCP is filled in here; Metrics
	// too, when Gateway.MetricsToken is set; URLSigningKey, when empty and
	// Durable, from a random key kept in the state dir (url-signing.key).
	Gateway gateway.Config
	// Durable keeps sessions in a store under the runtime's state dir and
	// restores them (adopting kernels that outlived the last gateway) in New.
	Durable bool
	// UI is the web notebook's static files; nil serves no UI.
	UI fs.FS
	// MetricsListen, when set, serves /metrics on that separate address
	// without auth (Run listens on it).
	MetricsListen string
	// PreviewListen, when set, serves the preview origin
	// (Gateway.PreviewBase) on that separate address.
	PreviewListen string
	// Snapshots configures the snapshot store; an empty Dir is the
	// runtime's state dir's snapshots, else a directory of this
	// process's, removed at Close. Replicas that share a Dir (a volume
	// they all mount) restore each other's snapshots.
	Snapshots snapshots.Config
}

// App is an assembled gateway. Build it with New; Run serves until its
// context ends; Close (after Run returns, or instead of it) releases
// everything. Its fields are read-only after New.
type App struct {
	Runtime  sessions.Runtime
	Manager  *sessions.Manager
	Gateway  *gateway.Server
	Metrics  *metrics.Metrics
	Restored sessions.RestoreResult // what New found of the previous gateway's sessions

	cfg     Config
	log     zerolog.Logger
	loop    func(context.Context) error // the runtime's periodic work
	release cleanup.Stack               // the runtime, then the store: undone (last first) by Close
}

// New builds the runtime, the store (when durable), the metrics, the
// manager and the gateway, then restores the stored sessions: the last
// step that can fail, so that a configuration error never costs the
// previous gateway's sessions. On error, whatever was built is released,
// and sessions already restored are detached (kernels that can outlive
// the gateway keep running, and their records, for the next start). ctx
// bounds the start (connecting to Docker or the cluster, restoring
// sessions), not the App's life.
func New(ctx context.Context, cfg Config, log zerolog.Logger) (_ *App, err error) {
	if err := cfg.Gateway.Validate(); err != nil { // before anything is built or restored
		return nil, fmt.Errorf("app: %w", err)
	}
	a := &App{cfg: cfg, log: log}
	defer func() { // a failed New releases what it built, sessions first
		if err == nil {
			return
		}
		if a.Manager != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = a.Manager.Detach(cctx)
		}
		err = errors.Join(err, a.release.Run())
	}()

	rt, err := newRuntime(ctx, cfg.Runtime, cfg.Sessions, log)
	if err != nil {
		return nil, err
	}
	a.Runtime, a.loop = rt.runtime, rt.loop
	a.release.PushFunc("runtime", rt.release)

	scfg := cfg.Sessions
	gcfg := cfg.Gateway
	if cfg.Durable {
		if sd, ok := rt.runtime.(sandbox.StateDirHolder); ok && sd.StateDir() != "" {
			st, err := sessionstore.Open(sessionstore.Config{Dir: sd.StateDir()}, log)
			if err != nil {
				return nil, fmt.Errorf("app: session store: %w", err)
			}
			a.release.Push("session store", st.Close)
			scfg.Store = st
			if len(gcfg.URLSigningKey) == 0 {
				if gcfg.URLSigningKey, err = storedSigningKey(sd.StateDir()); err != nil {
					return nil, err
				}
			}
		}
	}
	if sd, ok := rt.runtime.(sandbox.StateDirHolder); ok && sd.StateDir() != "" && rt.runtime.Name() != "k8s" {
		vs, err := volumes.Open(ctx, volumes.Config{Dir: filepath.Join(sd.StateDir(), "volumes")}, log.With().Str("component", "volumes").Logger())
		switch {
		case errors.Is(err, volumes.ErrUnsupported):
			log.Info().Err(err).Msg("no volumes")
		case err != nil:
			return nil, fmt.Errorf("app: volumes: %w", err)
		default:
			scfg.Volumes, gcfg.Volumes = vs, vs
			a.release.Push("volumes", vs.Close) // after the sessions: what they held stays mounted only if kept
		}
	}
	snapStore, err := a.openSnapshots(rt.runtime)
	if err != nil {
		return nil, err
	}
	scfg.Snapshots = snapStore
	a.Metrics = metrics.New()
	scfg.Observer = a.Metrics
	scfg.WatchSockets, scfg.WatchSocketDirs = gateway.MaxWatchSockets, gateway.MaxWatchDirs
	mgr, err := sessions.New(scfg, rt.runtime, log)
	if err != nil {
		return nil, fmt.Errorf("app: sessions: %w", err)
	}
	a.Manager = mgr
	a.Metrics.Watch(mgr)
	if sc, ok := rt.runtime.(sandbox.StartCounter); ok {
		a.Metrics.WatchStarts(sc)
	}

	if gcfg.MetricsToken != "" {
		gcfg.Metrics = a.Metrics.Handler()
	}
	mcfg := mcp.Config{MaxUploadBytes: int(min(gcfg.MaxUploadBytes, gateway.MCPMaxUpload)),
		Network: &mcp.NetworkPolicy{Allow: slices.Clone(scfg.Egress.Allow)}}
	if mcfg.MaxUploadBytes == 0 {
		mcfg.MaxUploadBytes = gateway.MCPMaxUpload
	}
	gcfg.MCP = func(inProcess http.RoundTripper) (http.Handler, error) {
		h, err := mcp.NewGatewayHandler(inProcess, mcfg, log)
		if err != nil {
			return nil, err
		}
		return h, nil
	}
	gcfg.Snapshots, gcfg.SnapshotStore = sessions.SnapshotsOf(mgr), snapStore
	if a.Gateway, err = gateway.New(gcfg, mgr, cfg.UI, log); err != nil {
		return nil, fmt.Errorf("app: gateway: %w", err)
	}
	if a.Restored, err = mgr.Restore(ctx); err != nil {
		return nil, fmt.Errorf("app: restore: %w", err)
	}
	return a, nil
}

// openSnapshots opens the snapshot store: Config.Snapshots.Dir, else
// under the runtime's state dir, else in a directory of the process's
// own, removed at Close.
func (a *App) openSnapshots(rt sessions.Runtime) (*snapshots.Store, error) {
	scfg := a.cfg.Snapshots
	if scfg.Dir != "" { // shared by replicas
	} else if sd, ok := rt.(sandbox.StateDirHolder); ok && sd.StateDir() != "" {
		scfg.Dir = filepath.Join(sd.StateDir(), "snapshots")
	} else {
		dir, err := os.MkdirTemp("", "glassroom-snapshots-")
		if err != nil {
			return nil, fmt.Errorf("app: snapshots: %w", err)
		}
		a.release.PushFunc("snapshots dir", func() { _ = os.RemoveAll(dir) })
		scfg.Dir = dir
	}
	store, err := snapshots.New(scfg)
	if err != nil {
		return nil, fmt.Errorf("app: snapshots: %w", err)
	}
	return store, nil
}

// Run serves the gateway on ln (nil: no listener, for in-process use),
// the manager's expiry loop, the runtime's reconciliation and, when
// configured, the metrics and preview listeners, until ctx ends or one of them fails.
// It returns the first error; the sessions keep running (Close ends them).
func (a *App) Run(ctx context.Context, ln net.Listener) error {
	var pln net.Listener
	if a.cfg.PreviewListen != "" {
		var err error
		if pln, err = net.Listen("tcp", a.cfg.PreviewListen); err != nil {
			return fmt.Errorf("app: preview listener: %w", err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	if ln != nil {
		g.Go(func() error { return a.Gateway.Serve(gctx, ln) })
	}
	g.Go(func() error { return a.Manager.Run(gctx) })
	g.Go(func() error { return a.loop(gctx) })
	if a.cfg.MetricsListen != "" {
		g.Go(func() error { return serveMetrics(gctx, a.cfg.MetricsListen, a.Metrics.Handler()) })
	}
	if pln != nil {
		g.Go(func() error { return a.Gateway.ServePreviews(gctx, pln) })
	}
	return g.Wait()
}

// Close ends the sessions, then releases the store and the runtime. With
// keep, kernels that can outlive the gateway (docker, k8s) keep running
// for the next gateway to adopt (Manager.Detach): a docker kernel that no
// gateway adopts ends itself at its session's end or after the runtime's
// OrphanGrace, whichever comes first; otherwise every kernel stops
// (Manager.Close). ctx bounds the sessions' shutdown. Call it once,
// after Run has returned.
func (a *App) Close(ctx context.Context, keep bool) error {
	a.Gateway.CloseMCP()
	var err error
	if keep {
		err = a.Manager.Detach(ctx)
	} else {
		err = a.Manager.Close(ctx)
	}
	return errors.Join(err, a.release.Run())
}

// Client returns a Go client of this gateway that calls it in-process,
// with key (one of Gateway.APIKeys): no socket is opened, WebSockets
// included.
func (a *App) Client(key string) (*client.Client, error) {
	return mcp.InProcessClient(a.Gateway.InProcessTransport(), key)
}

// serveMetrics serves the metrics handler on addr until ctx ends.
func serveMetrics(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-errc; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}
