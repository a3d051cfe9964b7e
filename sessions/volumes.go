package sessions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessionstore"
	"github.com/rs/zerolog"
)

// VolumeStore lends a tenant's named volumes to its sessions (package
// volumes): Acquire gives the host directory to bind, and release is
// called once the session no longer mounts it. Safe for concurrent use.
type VolumeStore interface {
	Acquire(ctx context.Context, tenant, name string) (hostDir string, release func(), err error)
}

// ErrNoVolumes is Create's error for a session that asks for volumes
// when the gateway keeps none (Config.Volumes is nil).
var ErrNoVolumes = errors.New("sessions: this gateway keeps no volumes")

// acquireVolumes checks a session's volumes (name → path in the
// workspace, absolute under it or relative to it) and borrows each from
// the store: the mounts for its spec, and what gives them back.
func (m *Manager) acquireVolumes(ctx context.Context, tenant string, want map[string]string) ([]sandbox.VolumeMount, map[string]string, func(), error) {
	if len(want) == 0 {
		return nil, nil, func() {}, nil
	}
	if m.cfg.Volumes == nil {
		return nil, nil, nil, ErrNoVolumes
	}
	if len(want) > sandbox.MaxVolumes {
		return nil, nil, nil, invalid("at most %d volumes", sandbox.MaxVolumes)
	}
	var releases []func()
	giveBack := func() {
		for _, r := range releases {
			r()
		}
	}
	paths := make(map[string]string, len(want))
	var mounts []sandbox.VolumeMount
	for _, name := range slices.Sorted(maps.Keys(want)) { // a stable order: the mounts and their errors
		p, err := sandbox.SandboxPath(want[name])
		if err != nil || p == sandbox.WorkDir {
			giveBack()
			return nil, nil, nil, invalid("volume %q: its path must be a directory under %s", name, sandbox.WorkDir)
		}
		host, release, err := m.cfg.Volumes.Acquire(ctx, tenant, name)
		if err != nil {
			giveBack()
			return nil, nil, nil, fmt.Errorf("sessions: volume %q: %w", name, err)
		}
		releases = append(releases, release)
		paths[name] = p
		mounts = append(mounts, sandbox.VolumeMount{HostDir: host, Path: strings.TrimPrefix(p, sandbox.WorkDir+"/")})
	}
	return mounts, paths, giveBack, nil
}

// reacquireVolumes borrows a restored session's volumes again, so that
// they cannot be deleted while it mounts them; a volume that cannot be
// borrowed (gone, or no store) is logged: its bind, made when the
// session was created, stays in the workspace until the session ends.
func (m *Manager) reacquireVolumes(ctx context.Context, rec sessionstore.Record, log zerolog.Logger) func() {
	var releases []func()
	for name := range rec.Volumes {
		if m.cfg.Volumes == nil {
			log.Warn().Str("volume", name).Msg("restored session: no volume store to hold its volume")
			continue
		}
		_, release, err := m.cfg.Volumes.Acquire(ctx, rec.Tenant, name)
		if err != nil {
			log.Warn().Err(err).Str("volume", name).Msg("restored session: its volume could not be held")
			continue
		}
		releases = append(releases, release)
	}
	return func() {
		for _, r := range releases {
			r()
		}
	}
}
