package docker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Reconcile removes containers of this instance and state directory, and
// session directories, that no live sandbox owns (a crashed gateway's).
// This runtime holds the state directory locked, so no other live gateway
// owns them; containers of another state directory (another gateway of
// the same instance) are left alone. Each Docker call is bounded by
// CallTimeout.
func (r *Runtime) Reconcile(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	list, err := r.cli.ContainerList(cctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", LabelManaged+"=true"), filters.Arg("label", LabelInstance+"="+r.cfg.Instance))})
	cancel()
	if err != nil {
		return fmt.Errorf("docker: reconcile: list: %w", err)
	}
	dirs, err := sandbox.SessionDirs(r.cfg.StateDir)
	if err != nil {
		return fmt.Errorf("docker: reconcile: %w", err)
	}
	plan := planReconcile(list, dirs, r.cfg.Instance, r.cfg.StateDir, r.live.Has)
	for _, c := range plan.containers {
		r.log.Info().Str("container", c.name).Msg("removing orphaned kernel container")
		rctx, rcancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		err := r.cli.ContainerRemove(rctx, c.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		rcancel()
		if err != nil && !cerrdefs.IsNotFound(err) {
			r.log.Warn().Err(err).Str("container", c.name).Msg("removing orphan failed")
		}
	}
	for _, id := range plan.dirs {
		if err := sandbox.RemoveDir(filepath.Join(r.cfg.StateDir, id)); err != nil {
			r.log.Warn().Err(err).Msg("removing orphaned session directory failed")
		}
	}
	return nil
}

type orphanContainer struct{ id, name string }

// reconcilePlan is what Reconcile removes.
type reconcilePlan struct {
	containers []orphanContainer
	dirs       []string // session ids
}

// planReconcile decides, without touching anything, which of the listed
// containers and session directories are orphans: those of this instance
// and state directory whose session is not live. Containers of other
// instances or state directories, and ones without the managed label, are
// never touched.
func planReconcile(list []container.Summary, dirs []string, instance, stateDir string, live func(id string) bool) reconcilePlan {
	var p reconcilePlan
	for _, c := range list {
		if c.Labels[LabelManaged] != "true" || c.Labels[LabelInstance] != instance || !ofStateDir(c, stateDir) {
			continue
		}
		if id := c.Labels[LabelSession]; id != "" && live(id) {
			continue
		}
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		p.containers = append(p.containers, orphanContainer{id: c.ID, name: name})
	}
	for _, id := range dirs {
		if !live(id) {
			p.dirs = append(p.dirs, id)
		}
	}
	return p
}

// ofStateDir reports whether the container belongs to the runtime of
// stateDir: its LabelStateDir says so or, on a container created before
// that label existed, it binds a directory under stateDir.
func ofStateDir(c container.Summary, stateDir string) bool {
	if owner, ok := c.Labels[LabelStateDir]; ok {
		return owner == stateDir
	}
	for _, m := range c.Mounts {
		if strings.HasPrefix(m.Source, stateDir+"/") {
			return true
		}
	}
	return false
}
