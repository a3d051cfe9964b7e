package sessions

import (
	"os"
	"strconv"
	"strings"

	"github.com/glassroom/glassroom/workspace"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Per-session costs in the host's per-user and per-process ceilings.
const (
	// fdsPerSession: five kernel sockets, the workspace, a process's pipe
	// and pidfd or an engine stream, WebSocket clients; generously.
	fdsPerSession = 32
	// fdsPerEgressConn: a session's egress proxy holds the client's and
	// the destination's socket for each open connection, and for as many
	// again being refused (egress.Config.MaxConns each).
	fdsPerEgressConn = 4
)

// hostNeeds is what MaxSessions sessions (plus the warm pool) and the
// gateway's files-watch sockets may hold of the host's ceilings at most:
// open files of the gateway, inotify instances and watched directories of
// its user.
type hostNeeds struct {
	sessions                int
	fds, instances, watches int
}

func needsOf(cfg Config) hostNeeds {
	n := cfg.MaxSessions + cfg.Pool
	perSession := fdsPerSession
	if len(cfg.Egress.Allow) > 0 { // sessions may have a network, and a proxy
		perSession += fdsPerEgressConn * max(cfg.Egress.MaxConns, 16)
	}
	return hostNeeds{
		sessions:  n,
		fds:       n*perSession + cfg.WatchSockets + 256,
		instances: (n+workspace.DefaultWatchersPerInstance-1)/workspace.DefaultWatchersPerInstance + cfg.WatchSockets + 8,
		watches:   n*cfg.WatchDirs + cfg.WatchSockets*cfg.WatchSocketDirs,
	}
}

// checkHostLimits compares what needsOf(cfg) counts with the host's
// ceilings, raises what this process may raise, and logs one clear line
// for each that is too low, naming the setting to change. It never fails:
// a session that later hits a ceiling fails to be created with a clear
// error instead.
func checkHostLimits(cfg Config, log zerolog.Logger) {
	need := needsOf(cfg)
	n := need.sessions
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		if lim.Cur < lim.Max {
			lim.Cur = lim.Max
			_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
		}
		if lim.Cur < uint64(need.fds) {
			log.Warn().Uint64("nofile", lim.Cur).Int("needed", need.fds).
				Msgf("open-file limit too low for %d sessions: raise the gateway's RLIMIT_NOFILE (ulimit -n, LimitNOFILE=)", n)
		}
	}
	if have, ok := procInt("/proc/sys/fs/inotify/max_user_instances"); ok && have < need.instances {
		log.Warn().Int("have", have).Int("needed", need.instances).
			Msgf("fs.inotify.max_user_instances too low for %d sessions and %d files-watch sockets: sysctl -w fs.inotify.max_user_instances=%d", n, cfg.WatchSockets, need.instances+56)
	}
	if have, ok := procInt("/proc/sys/fs/inotify/max_user_watches"); ok && have < need.watches {
		log.Warn().Int("have", have).Int("needed", need.watches).
			Msgf("fs.inotify.max_user_watches too low for %d sessions of %d watched directories and %d files-watch sockets (changes past it are reported truncated): sysctl -w fs.inotify.max_user_watches=%d", n, cfg.WatchDirs, cfg.WatchSockets, need.watches)
	}
}

func procInt(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return v, err == nil
}
