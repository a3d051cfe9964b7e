package docker

import (
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"
)

// TestPlanReconcileOwnStateDirOnly: a runtime removes only containers of
// its instance and state directory (by label or, for a container from
// before the label, by where its binds come from) whose session is not
// live; never another state directory's, another instance's, or an
// unmanaged one.
func TestPlanReconcileOwnStateDirOnly(t *testing.T) {
	const state = "/run/glassroom/docker"
	c := func(name, instance, stateDir, session, mount string) container.Summary {
		labels := map[string]string{LabelManaged: "true", LabelInstance: instance, LabelSession: session}
		if stateDir != "" {
			labels[LabelStateDir] = stateDir
		}
		s := container.Summary{ID: name, Names: []string{"/" + name}, Labels: labels}
		if mount != "" {
			s.Mounts = []container.MountPoint{{Source: mount}}
		}
		return s
	}
	list := []container.Summary{
		c("ours-dead", "default", state, "s-dead-0001", state+"/s-dead-0001/ipc"),
		c("ours-live", "default", state, "s-live-0001", state+"/s-live-0001/ipc"),
		c("other-state-dir", "default", state+"-mcp-0", "s-mcp-00001", state+"-mcp-0/s-mcp-00001/ipc"),
		c("legacy-ours", "default", "", "s-old-00001", state+"/s-old-00001/ipc"),
		c("legacy-other", "default", "", "s-old-00002", "/srv/other/s-old-00002/ipc"),
		c("legacy-prefix", "default", "", "s-old-00003", state+"-mcp-0/s-old-00003/ipc"),
		c("other-instance", "blue", state, "s-blue-0001", state+"/s-blue-0001/ipc"),
		{ID: "unmanaged", Names: []string{"/unmanaged"}, Labels: map[string]string{LabelInstance: "default", LabelStateDir: state}},
	}
	live := func(id string) bool { return id == "s-live-0001" }
	p := planReconcile(list, []string{"s-dead-0001", "s-live-0001"}, "default", state, live)
	var got []string
	for _, c := range p.containers {
		got = append(got, c.name)
	}
	if want := []string{"ours-dead", "legacy-ours"}; !slices.Equal(got, want) {
		t.Fatalf("removes containers %v, want %v", got, want)
	}
	if want := []string{"s-dead-0001"}; !slices.Equal(p.dirs, want) {
		t.Fatalf("removes dirs %v, want %v", p.dirs, want)
	}
}
