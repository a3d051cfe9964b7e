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
)

// checkHostLimits compares what MaxSessions sessions (plus the warm pool)
// need with the host's ceilings, raises what this process may raise, and
// logs one clear line for each that is too low, naming the setting to
// change. It never fails: a session that later hits a ceiling fails to be
// created with a clear error instead.
func checkHostLimits(cfg Config, log zerolog.Logger) {
	n := cfg.MaxSessions + cfg.Pool
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		if lim.Cur < lim.Max {
			lim.Cur = lim.Max
			_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
		}
		if need := uint64(n*fdsPerSession + 256); lim.Cur < need {
			log.Warn().Uint64("nofile", lim.Cur).Uint64("needed", need).
				Msgf("open-file limit too low for %d sessions: raise the gateway's RLIMIT_NOFILE (ulimit -n, LimitNOFILE=)", n)
		}
	}
	instances := (n + workspace.DefaultWatchersPerInstance - 1) / workspace.DefaultWatchersPerInstance
	if have, ok := procInt("/proc/sys/fs/inotify/max_user_instances"); ok && have < instances+8 {
		log.Warn().Int("have", have).Int("needed", instances+8).
			Msgf("fs.inotify.max_user_instances too low for %d sessions: sysctl -w fs.inotify.max_user_instances=%d", n, instances+64)
	}
	if have, ok := procInt("/proc/sys/fs/inotify/max_user_watches"); ok && have < n*cfg.WatchDirs {
		log.Warn().Int("have", have).Int("needed", n*cfg.WatchDirs).
			Msgf("fs.inotify.max_user_watches too low for %d sessions of %d watched directories (changes past it are reported truncated): sysctl -w fs.inotify.max_user_watches=%d", n, cfg.WatchDirs, n*cfg.WatchDirs)
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
