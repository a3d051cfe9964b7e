package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
)

// TestHostOnTheEngine: real containers with glassroom's labels, of a
// state dir a live gateway holds (its lock), of one whose lock is free,
// and of one that is gone: the Host lists the three with their owners,
// and RemoveUnowned removes the two no gateway owns and leaves the live
// gateway's running.
func TestHostOnTheEngine(t *testing.T) {
	testkit.RealThing(t, "Docker")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	instance := "hosttest-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36)
	h, err := docker.NewHost(ctx, docker.HostConfig{Instance: instance}, zerolog.Nop())
	if err != nil {
		testkit.Unavailable(t, "Docker: %v", err)
	}
	defer h.Close()
	cli := dockerClient(t)
	root := t.TempDir()
	os.Chmod(root, 0o711)
	live, free, gone := filepath.Join(root, "live"), filepath.Join(root, "free"), filepath.Join(root, "gone")
	l, err := sandbox.LockStateDir(live)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := os.Mkdir(free, 0o711); err != nil {
		t.Fatal(err)
	}
	image := os.Getenv("GLASSROOM_TEST_KERNEL_IMAGE")
	if image == "" {
		image = "glassroom/python-kernel:latest"
	}
	made := map[string]string{} // state dir -> container name
	for _, dir := range []string{live, free, gone} {
		session := filepath.Base(dir) + "-session-01"
		name := "glassroom-" + instance + "-" + session
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := cli.ContainerCreate(cctx, &container.Config{Image: image, Entrypoint: []string{"/bin/sleep", "600"}, NetworkDisabled: true,
			Labels: map[string]string{docker.LabelManaged: "true", docker.LabelInstance: instance, docker.LabelSession: session, docker.LabelStateDir: dir}},
			&container.HostConfig{NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}}, nil, nil, name)
		if err == nil {
			err = cli.ContainerStart(cctx, name, container.StartOptions{})
		}
		ccancel()
		t.Cleanup(func() {
			rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer rcancel()
			_ = cli.ContainerRemove(rctx, name, container.RemoveOptions{Force: true})
		})
		if err != nil {
			t.Fatalf("container %s: %v", name, err)
		}
		made[dir] = name
	}

	list, err := h.Sandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]docker.Owner{}
	for _, s := range list {
		owners[s.Container] = s.Owner
		if s.State != "running" || s.Instance != instance || time.Since(s.Created) > time.Hour {
			t.Errorf("%s: %+v", s.Container, s)
		}
	}
	if o := owners[made[live]]; len(list) != 3 || !o.Live || o.PID != os.Getpid() || owners[made[free]].Live || owners[made[gone]].Live {
		t.Fatalf("owners %v of %d sandboxes, want the live state dir's held by this process, the others none", owners, len(list))
	}

	removed, err := h.RemoveUnowned(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range removed {
		got = append(got, s.Container)
	}
	slices.Sort(got)
	if want := []string{made[free], made[gone]}; !slices.Equal(got, want) {
		t.Fatalf("removed %v, want %v", got, want)
	}
	for dir, name := range made {
		ictx, icancel := context.WithTimeout(ctx, 10*time.Second)
		info, err := cli.ContainerInspect(ictx, name)
		icancel()
		switch {
		case dir == live && (err != nil || !info.State.Running):
			t.Errorf("the live gateway's container %s: %v", name, err)
		case dir != live && !cerrdefs.IsNotFound(err):
			t.Errorf("the unowned container %s is still there: %v", name, err)
		}
	}
}
