package sessions

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Runtime starts sandboxed kernels. kernel/runtime/local and kernel/runtime/docker
// implement it; Start must be safe for concurrent use.
type Runtime interface {
	Name() string
	Start(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error)
}

// Config holds the limits of the session manager. Zero fields take the
// defaults named in their comments.
type Config struct {
	ExecTimeout    time.Duration // default execution timeout (60 s)
	MaxExecTimeout time.Duration // largest timeout a request may ask for (10 min)
	InterruptGrace time.Duration // after a timeout's interrupt, wait this long before restarting a kernel that made no progress (3 s)
	// InterruptMaxWait bounds how long a timed-out kernel that makes
	// progress (CPU time, output) but has not obeyed is interrupted again,
	// a grace at a time, before it is restarted all the same (30 s).
	InterruptMaxWait time.Duration

	MaxStreamBytes   int // stdout+stderr kept per execution (1 MiB)
	MaxRichBytes     int // rich output (displays, results, errors, prompts) kept per execution (10 MiB)
	MaxCodeBytes     int // largest code of one execution (1 MiB)
	MaxEvents        int // output events kept per execution (10000); many tiny outputs cost more than their bytes
	MaxInputRequests int // input requests relayed per execution (1000)

	IdleTimeout    time.Duration // a session with no activity for this long is deleted (20 min)
	MaxIdleTimeout time.Duration // largest idle timeout a session may ask for (24 h)
	MaxLifetime    time.Duration // a session is deleted this long after creation (12 h)

	MaxSessions          int // in total (64)
	MaxSessionsPerTenant int // per tenant (16)
	QueueDepth           int // queued executions per session (32)
	// QueueCodeBytes bounds the code of one kernel's queued executions
	// together (2 MiB): gateway memory no budget counts, so a tenant's
	// 128 kernels hold at most 256 MiB of it. An execution past it is
	// refused with ErrQueueFull, as past QueueDepth; one alone in the
	// queue is always taken (up to MaxCodeBytes).
	QueueCodeBytes int

	BacklogEvents    int // events kept per session for replay (2000)
	BacklogBytes     int // bytes of events kept per session for replay (16 MiB)
	SubscriberBuffer int // events buffered per subscriber before it is dropped and resubscribed (256)
	SubscriberBytes  int // bytes buffered per subscriber before it is dropped and resubscribed (16 MiB)
	MaxClients       int // WebSocket clients attached to one session at once (16)
	MaxContexts      int // kernels (contexts) of one session, its first included (8)

	// Comms (comms.go, side.go): MaxComms open comms per kernel (10000);
	// CommRate comm messages a second a session's clients may send (200;
	// negative: no limit), in bursts of CommBurst (400); MaxCommBytes
	// bounds one comm message a client sends, content, metadata and
	// buffers together (8 MiB). SideBuffer and SideBytes bound what each
	// subscriber of the kernel's side stream (SubscribeKernel) may have
	// waiting (1024 messages, 8 MiB); past them it loses messages.
	MaxComms     int
	CommRate     int
	CommBurst    int
	MaxCommBytes int
	SideBuffer   int
	SideBytes    int

	// MemoryBudget bounds, across all sessions, the bytes of output the
	// gateway keeps for clients: event backlogs and the outputs REST
	// executions collect (1 GiB). When it is spent, backlogs keep only
	// their newest events (older ones are evicted first, session by
	// session) and a REST execution stops collecting, with truncated set.
	MemoryBudget int64
	// MemoryBudgetPerTenant is the most of MemoryBudget one tenant's
	// sessions hold together (MemoryBudget × MaxSessionsPerTenant /
	// MaxSessions: 256 MiB with the defaults), so that one tenant cannot
	// spend what the others' executions need.
	MemoryBudgetPerTenant int64
	// KeptOutputBytes bounds the command output one session keeps for
	// later reading (Commands.Get; 16 MiB). Kept output of all tenants
	// together takes at most a quarter of MemoryBudget, and of one tenant
	// a quarter of its share; it is the first evicted (oldest first, the
	// command's output then reads truncated) when live output needs room.
	KeptOutputBytes int64

	WatchDirs  int // directories watched for file events per session (256)
	WatchPaths int // changed paths reported per execution (1000)
	// WatchSockets and WatchSocketDirs are what the gateway's files-watch
	// sockets hold of the host's inotify ceilings at most (instances and
	// watched directories), counted into the check of those ceilings at
	// start (none by default).
	WatchSockets, WatchSocketDirs int

	StartTimeout time.Duration // kernel start, including the first connection (60 s)
	// MaxConcurrentStarts bounds kernels starting at once (4, warm-pool
	// refills included): a burst of creations queues instead of starting
	// a hundred kernels together on a few cores.
	MaxConcurrentStarts int
	// ExecSlots is how many executions may run at once, gateway-wide
	// (default: twice the number of CPUs; negative: no limit). Executions
	// beyond wait their turn, in order within a tenant and fairly between
	// tenants (a freed slot goes to the waiting tenant holding the
	// fewest), so that under load
	// every session sees the same latency instead of a few seeing long
	// stalls. Twice the CPUs keeps the cores busy while a kernel waits on
	// its sockets (40 sessions on 2 cores: 534 exec/s with p99 1.3× p50,
	// against 401 exec/s with one slot per CPU and a p99 of 143× p50 with
	// no limit).
	// ExecSlotLease (50 ms) is how long one execution holds its slot: a
	// longer one keeps running and lets the next go.
	ExecSlots     int
	ExecSlotLease time.Duration
	// Pool is how many pre-started kernels with the default spec the
	// manager keeps ready (0: none). Sessions with no env and default
	// limits take one; refills run one at a time in the background.
	Pool int
	// PoolPreload are the Python modules a pooled kernel imports before a
	// session takes it (numpy, pandas, matplotlib.pyplot: the first
	// analysis cell then costs what a second one does). The import runs
	// silently (no execution count, no history, no output) and binds no
	// name: the session's namespace is as empty as a cold kernel's, and
	// only sys.modules differs. nil: none. At most MaxPoolPreload dotted
	// module names.
	PoolPreload  []string
	ReapInterval time.Duration // how often pausing is checked, and expiry at the latest (5 s; a deadline wakes the reaper sooner)
	// PauseAfter freezes a session's sandbox (docker pause, the cgroup
	// freezer) once its kernel has gone unused this long, so an idle
	// kernel costs no CPU; the next use thaws it. 0: never. Code left
	// running in the background (threads) is frozen too.
	PauseAfter time.Duration

	// Store keeps sessions across gateway restarts (none by default);
	// FlushInterval is how often their changing parts (activity, event
	// numbers, the running execution) are written (1 s).
	Store         Store
	FlushInterval time.Duration
	// MetricsInterval is how often every running session's resource use
	// is sampled for its history (Session.MetricsHistory; 5 s, E2B's
	// collection interval; negative: never, only Metrics calls add to
	// it); MetricsHistory is how many samples a session keeps (120, ten
	// minutes; at most MaxMetricsHistory).
	MetricsInterval time.Duration
	MetricsHistory  int
	// AdoptInterval is how often a runtime that finds orphaned sandboxes
	// itself (sandbox.OrphanFinder: k8s) is asked for them, to adopt the
	// sessions of a gateway that went away (10 s).
	AdoptInterval time.Duration
	// Observer is told what happens, for metrics (none by default).
	Observer Observer

	Kernel kernel.Config // kernel client settings
	// Egress is the operator's network policy: the ceiling of what a
	// session may ask for (none by default: no session gets a network),
	// and the limits of each session's egress proxy.
	Egress egress.Config
	// Volumes lends tenants' named volumes to their sessions
	// (CreateOptions.Volumes); nil: sessions with volumes are refused
	// (ErrNoVolumes).
	Volumes VolumeStore
	// Snapshots keeps snapshots of sessions: their captures, forks and
	// hibernations (SnapshotsOf); nil: there are none (ErrNoSnapshots).
	Snapshots SnapshotStore
	// SnapshotTimeout bounds one capture or restore (default 10 min);
	// MaxForks, the count of one fork (default 8, at most 64).
	SnapshotTimeout time.Duration
	MaxForks        int
	// Dial connects to a sandbox's kernel (default: kernel.Dial). Tests
	// replace it with a fake kernel.
	Dial DialFunc

	// Templates are the operator's session presets (LoadTemplates), added
	// to the built-in "default" and "code-interpreter-v1" (which they may
	// redefine). Checked by New.
	Templates map[string]Template

	// Kernels, when set, are the only kernels the gateway offers (names or
	// aliases of the kernel registry; python3, the default, among them):
	// the operator's choice of languages, among those the runtime has.
	// Empty: every kernel the runtime has.
	Kernels []string
}

func (c Config) withDefaults() Config {
	d := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	i := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	d(&c.ExecTimeout, 60*time.Second)
	d(&c.SnapshotTimeout, 10*time.Minute)
	i(&c.MaxForks, 8)
	d(&c.MaxExecTimeout, 10*time.Minute)
	d(&c.InterruptGrace, 3*time.Second)
	d(&c.InterruptMaxWait, 30*time.Second)
	i(&c.MaxStreamBytes, 1<<20)
	i(&c.MaxRichBytes, 10<<20)
	i(&c.MaxCodeBytes, 1<<20)
	i(&c.QueueCodeBytes, 2<<20)
	i(&c.MaxEvents, 10000)
	i(&c.MaxInputRequests, 1000)
	d(&c.IdleTimeout, 20*time.Minute)
	d(&c.MaxIdleTimeout, 24*time.Hour)
	d(&c.MaxLifetime, 12*time.Hour)
	i(&c.MaxSessions, 64)
	i(&c.MaxSessionsPerTenant, 16)
	i(&c.QueueDepth, 32)
	i(&c.BacklogEvents, 2000)
	i(&c.BacklogBytes, 16<<20)
	i(&c.SubscriberBuffer, 256)
	i(&c.SubscriberBytes, 16<<20)
	i(&c.MaxClients, 16)
	i(&c.MaxContexts, 8)
	i(&c.MaxComms, 10000)
	i(&c.CommRate, 200)
	i(&c.CommBurst, 400)
	i(&c.MaxCommBytes, 8<<20)
	i(&c.SideBuffer, 1024)
	i(&c.SideBytes, 8<<20)
	if c.MemoryBudget == 0 {
		c.MemoryBudget = 1 << 30
	}
	if c.MemoryBudgetPerTenant == 0 && c.MaxSessions > 0 {
		c.MemoryBudgetPerTenant = c.MemoryBudget / int64(c.MaxSessions) * int64(c.MaxSessionsPerTenant)
	}
	if c.KeptOutputBytes == 0 {
		c.KeptOutputBytes = 16 << 20
	}
	i(&c.WatchDirs, 256)
	i(&c.WatchPaths, 1000)
	d(&c.StartTimeout, 60*time.Second)
	i(&c.MaxConcurrentStarts, 4)
	i(&c.ExecSlots, 2*runtime.NumCPU())
	d(&c.ExecSlotLease, 50*time.Millisecond)
	d(&c.ReapInterval, 5*time.Second)
	if c.Dial == nil {
		c.Dial = dialKernel
	}
	if c.Store == nil {
		c.Store = noStore{}
	}
	d(&c.FlushInterval, time.Second)
	d(&c.MetricsInterval, DefaultMetricsInterval)
	i(&c.MetricsHistory, DefaultMetricsHistory)
	d(&c.AdoptInterval, 10*time.Second)
	if c.Observer == nil {
		c.Observer = noObserver{}
	}
	return c
}

// budgetShares returns the shares of MemoryBudget (withDefaults applied).
func (c *Config) budgetShares() BudgetShares {
	return BudgetShares{Tenant: c.MemoryBudgetPerTenant, Kept: c.MemoryBudget / 4,
		KeptTenant: c.MemoryBudgetPerTenant / 4, KeptSession: c.KeptOutputBytes}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.SnapshotTimeout < time.Second || c.MaxForks < 1 || c.MaxForks > 64:
		return errors.New("sessions: config: the snapshot timeout must be at least 1s and MaxForks within 1..64")
	case c.ExecTimeout < 0 || c.ExecTimeout > c.MaxExecTimeout:
		return fmt.Errorf("sessions: config: exec timeout %v must be within 0..%v", c.ExecTimeout, c.MaxExecTimeout)
	case c.PauseAfter < 0:
		return fmt.Errorf("sessions: config: negative pause delay %v", c.PauseAfter)
	case c.IdleTimeout < 0 || c.IdleTimeout > c.MaxIdleTimeout:
		return fmt.Errorf("sessions: config: idle timeout %v must be within 0..%v", c.IdleTimeout, c.MaxIdleTimeout)
	case c.MaxSessionsPerTenant > c.MaxSessions:
		return fmt.Errorf("sessions: config: per-tenant limit %d exceeds total %d", c.MaxSessionsPerTenant, c.MaxSessions)
	case c.MaxStreamBytes < 0 || c.MaxRichBytes < 0 || c.MaxCodeBytes < 0 || c.QueueCodeBytes < 0 || c.MaxEvents < 0 || c.MaxInputRequests < 0 ||
		c.MaxSessions < 0 || c.QueueDepth < 0 || c.BacklogEvents < 0 || c.BacklogBytes < 0 || c.SubscriberBuffer < 0 ||
		c.SubscriberBytes < 0 || c.MaxClients < 0 || c.WatchSockets < 0 || c.WatchSocketDirs < 0 || c.MaxContexts < 0 || c.InterruptGrace < 0 || c.InterruptMaxWait < 0 || c.MaxLifetime < 0 || c.MemoryBudget < 0 || c.MemoryBudgetPerTenant < 0 || c.KeptOutputBytes < 0 ||
		c.MaxConcurrentStarts < 0 || c.Pool < 0 || c.MaxComms < 0 || c.CommBurst < 0 || c.MaxCommBytes < 0 || c.SideBuffer < 0 || c.SideBytes < 0:
		return fmt.Errorf("sessions: config: negative limit")
	case c.MetricsHistory < 0 || c.MetricsHistory > MaxMetricsHistory:
		return fmt.Errorf("sessions: config: metrics history of %d samples must be within 0 (the default, %d) and %d", c.MetricsHistory, DefaultMetricsHistory, MaxMetricsHistory)
	case len(c.PoolPreload) > MaxPoolPreload:
		return fmt.Errorf("sessions: config: %d modules to preload; at most %d", len(c.PoolPreload), MaxPoolPreload)
	case c.MemoryBudget < int64(c.BacklogBytes):
		return fmt.Errorf("sessions: config: memory budget %d is smaller than one session's backlog (%d)", c.MemoryBudget, c.BacklogBytes)
	case c.MemoryBudgetPerTenant > c.MemoryBudget:
		return fmt.Errorf("sessions: config: a tenant's memory budget %d exceeds the whole (%d)", c.MemoryBudgetPerTenant, c.MemoryBudget)
	}
	for _, mod := range c.PoolPreload {
		if !validModuleName(mod) {
			return fmt.Errorf("sessions: config: preload %q: not a dotted Python module name", mod)
		}
	}
	if err := c.Egress.Validate(); err != nil {
		return fmt.Errorf("sessions: config: %w", err)
	}
	if len(c.Kernels) > 0 {
		def := false
		for _, n := range c.Kernels {
			k, ok := sandbox.LookupKernel(n)
			if !ok {
				return fmt.Errorf("sessions: config: kernels: unknown kernel %q (one of: %s)", n, kernelNames(sandbox.Kernels()))
			}
			def = def || k.Name == sandbox.DefaultKernel
		}
		if !def {
			return fmt.Errorf("sessions: config: kernels: %s, the default kernel, must be among them", sandbox.DefaultKernel)
		}
	}
	return c.Kernel.Validate()
}

// DefaultConfig returns the configuration with every default filled in
// (what a zero Config means); command-line flags start from it.
func DefaultConfig() Config {
	c := Config{}.withDefaults()
	c.Dial, c.Store, c.Observer = nil, nil, nil // New fills them; a flag set has no use for them
	return c
}
