package sessions

import "testing"

// TestHostNeedsCountEverySharedHolder: the host check counts the egress
// proxies' sockets when sessions may have a network, and the gateway's
// files-watch sockets' inotify instances and watched directories.
func TestHostNeedsCountEverySharedHolder(t *testing.T) {
	base := Config{MaxSessions: 64, WatchDirs: 256}
	plain := needsOf(base)
	withNet := base
	withNet.Egress.Allow = []string{"pypi.org"}
	withNet.Egress.MaxConns = 16
	if got, want := needsOf(withNet).fds-plain.fds, 64*4*16; got != want {
		t.Fatalf("egress adds %d open files for 64 sessions, want %d (client and destination sockets, open and refused)", got, want)
	}
	watching := base
	watching.WatchSockets, watching.WatchSocketDirs = 32, 256
	w := needsOf(watching)
	if w.instances-plain.instances != 32 || w.watches-plain.watches != 32*256 || w.fds-plain.fds != 32 {
		t.Fatalf("32 files-watch sockets of 256 directories add %+v over %+v", w, plain)
	}
}
