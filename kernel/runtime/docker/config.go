package docker

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Labels put on every container.
const (
	LabelManaged  = "io.glassroom.managed"
	LabelInstance = "io.glassroom.instance"
	LabelSession  = "io.glassroom.session"
	// LabelStateDir names the state directory of the runtime that created
	// the container: with Instance, the identity of its owner. A runtime
	// reconciles and adopts only containers of its own state directory,
	// which it holds locked, so gateways of one instance with different
	// state directories leave each other's containers alone.
	LabelStateDir = "io.glassroom.state-dir"
)

// Defaults of a Config that names no state directory or UIDBase.
const (
	DefaultStateDir = "/run/glassroom/docker"
	DefaultUIDBase  = 300000
)

// SeccompDockerDefault selects Docker's own default seccomp profile
// instead of glassroom's stricter one.
const SeccompDockerDefault = "docker-default"

// Config configures the Docker runtime. Zero fields take defaults.
type Config struct {
	// Common holds what every runtime shares. StateDir defaults to
	// /run/glassroom/docker; it must be the same path on the host and,
	// when the gateway runs in a container, inside it. UIDBase defaults to
	// 300000.
	sandbox.Common
	// Image is the kernel image (default glassroom/python-kernel:latest).
	Image string
	// OCIRuntime is the container runtime: runc (default), runsc (gVisor), kata.
	OCIRuntime string
	// Instance names this gateway in labels and container names (default
	// "default"). Gateways may share an instance: each reconciles and
	// adopts only the containers of its own state directory
	// (LabelStateDir), which it holds locked.
	Instance string
	// SeccompProfile is a path to a seccomp JSON profile. Empty selects
	// glassroom's profile (Docker's default without ptrace, io_uring and
	// modify_ldt, and sockets only in the unix, inet, inet6 and netlink
	// families); SeccompDockerDefault selects Docker's.
	SeccompProfile string
	// CallTimeout bounds each Docker API call (10 s).
	CallTimeout time.Duration
	// ReconcileInterval is how often orphaned containers are removed (1 min).
	ReconcileInterval time.Duration
	// Adopting leaves this instance's containers alone when the runtime
	// starts, for the session layer to adopt (sandbox.Adopter); it calls
	// Reconcile once it has. Otherwise New removes them as orphans.
	Adopting bool
	// LogMaxBytes bounds what the engine keeps of a container's own output
	// (1 MiB): the kernel writes it, so it must not fill the host's disk.
	LogMaxBytes int
	// OrphanGrace bounds how long a container runs on once no gateway
	// holds it (2 h): detached (SIGTERM with keep), it ends by then after
	// the detach; left by a gateway that died, by then after the
	// gateway's last renewal of its deadline. It ends at its session's end
	// if that comes first, and not at all if a gateway adopts it first.
	// See the package doc.
	OrphanGrace time.Duration
}

// DefaultOrphanGrace is a Config's OrphanGrace when it names none.
const DefaultOrphanGrace = 2 * time.Hour

func (c Config) withDefaults() Config {
	c.Common = c.Common.WithDefaults(DefaultStateDir, DefaultUIDBase)
	if c.Image == "" {
		c.Image = "glassroom/python-kernel:latest"
	}
	if c.OCIRuntime == "" {
		c.OCIRuntime = "runc"
	}
	if c.Instance == "" {
		c.Instance = "default"
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 10 * time.Second
	}
	if c.ReconcileInterval == 0 {
		c.ReconcileInterval = time.Minute
	}
	if c.LogMaxBytes == 0 {
		c.LogMaxBytes = 1 << 20
	}
	if c.OrphanGrace == 0 {
		c.OrphanGrace = DefaultOrphanGrace
	}
	return c
}

// instancePattern is the shape of an instance name (it goes into container names).
var instancePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := c.Common.Validate(); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	if !instancePattern.MatchString(c.Instance) {
		return fmt.Errorf("docker: config: instance %q must match %s", c.Instance, instancePattern)
	}
	if c.CallTimeout < 0 || c.ReconcileInterval < 0 || c.LogMaxBytes < 4096 {
		return errors.New("docker: config: bad timeout or log size")
	}
	if c.OrphanGrace < time.Second {
		return fmt.Errorf("docker: config: orphan grace %v must be at least 1s", c.OrphanGrace)
	}
	return nil
}
