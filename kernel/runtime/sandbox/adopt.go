package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/glassroom/glassroom/kernel"
)

// State is what a runtime needs to take over a running sandbox after the
// gateway restarted. It holds the kernel's key: keep it private (the
// session store is a mode 0600 file).
type State struct {
	ID     string                `json:"id"`
	UID    int                   `json:"uid"`
	GID    int                   `json:"gid"`
	Limits Limits                `json:"limits"`
	Conn   kernel.ConnectionInfo `json:"conn"`
	// Incarnation identifies the kernel process State describes (for
	// docker, when its container started): after an adoption, a different
	// one means the kernel restarted while no gateway watched it, and its
	// variables are gone.
	Incarnation string `json:"incarnation,omitempty"`
	// Driver is the runtime's own part (for docker: the container and the
	// time its current kernel started, which identifies the incarnation).
	Driver json.RawMessage `json:"driver,omitempty"`
}

// Persistent is implemented by sandboxes that outlive the gateway's
// process (containers): a new gateway can adopt them, with their kernels
// and variables.
type Persistent interface {
	// State describes the sandbox and its current kernel; it changes
	// after Restart.
	State() State
	// Detach lets the sandbox go without stopping it: the gateway is
	// shutting down for an upgrade and the next one adopts it. It stops
	// the goroutines that watch the kernel and returns.
	Detach(ctx context.Context) error
}

// Expiring is implemented by Persistent sandboxes that end themselves
// once no gateway holds them (docker: the container's init stops it at a
// deadline only the gateway can write): a sandbox whose gateway went away
// for good, and that no other gateway adopted, does not run for ever.
type Expiring interface {
	// SetEnd tells the sandbox when its session ends. While a gateway
	// holds the sandbox its deadline stays past end (the gateway ends the
	// session itself then) and, renewed by the runtime, within the
	// runtime's orphan grace from now; once it is detached, or its gateway
	// dies, it ends itself at end or once the grace has passed, whichever
	// comes first, unless a gateway adopts it. The session layer calls it
	// when a session is created or restored, when its lifetime changes,
	// and just before Detach with the time after which the session could
	// no longer be restored (its idle expiry, when that is earlier). A
	// zero end means "not known": only the grace bounds the sandbox.
	SetEnd(end time.Time) error
}

// Adopter is implemented by runtimes whose sandboxes outlive the gateway.
type Adopter interface {
	// Adopt takes over the running sandbox st describes, as Start would
	// have returned it. It fails (and changes nothing) when the sandbox is
	// gone or is not the one st describes (another image, another
	// instance). The caller must Close (or Detach) what it returns.
	Adopt(ctx context.Context, st State) (Sandbox, error)
	// Reconcile removes what this runtime's instance left and no live
	// sandbox owns. A gateway calls it once it has adopted what it could.
	Reconcile(ctx context.Context) error
}

// Orphan is a sandbox that no gateway serves, as the runtime's own system
// of record (a cluster's API) describes it: enough to adopt it (State) and
// to serve it to its owner.
type Orphan struct {
	State   State
	Tenant  string // the Spec's Tenant; "" when it was never known
	Created time.Time
}

// OrphanFinder is implemented by Adopters whose sandboxes can be found
// without the store of the gateway that started them (a Kubernetes
// runtime finds them in the cluster): a gateway adopts what Orphans lists,
// its own sandboxes after a restart as well as those of another gateway
// that went away. Orphans excludes the sandboxes this runtime serves, and
// those of a gateway that is alive.
type OrphanFinder interface {
	Orphans(ctx context.Context) ([]Orphan, error)
}

// Locator is implemented by OrphanFinders whose sandboxes several live
// gateways serve at once (Kubernetes: replicas of one Deployment): it says
// who serves a sandbox, so that any gateway can answer for any session.
type Locator interface {
	// Locate says where sandbox id of tenant is served; ErrNotLocated
	// when the runtime knows no such sandbox, or it is another tenant's
	// (told before anything of it is read). It makes API calls: ctx
	// bounds them. Safe for concurrent use.
	Locate(ctx context.Context, id, tenant string) (Location, error)
}

// PeerLister is implemented by runtimes whose gateways share their
// sandboxes (the k8s runtime's replicas): the other live gateways, each
// with where it serves its API, so that a gateway can answer for them all
// (a list of every session). It makes API calls: ctx bounds them. Safe
// for concurrent use.
type PeerLister interface {
	Peers(ctx context.Context) ([]Peer, error)
}

// Fenceable is implemented by sandboxes that another gateway can take
// over while this one still holds them (a partitioned or paused k8s
// replica whose Lease expired): Fenced is closed once the sandbox has
// refused this gateway, which must then let the session go without
// deleting anything (its kernel is the other gateway's now).
type Fenceable interface {
	Fenced() <-chan struct{}
}

// IsFenced reports whether sb is a Fenceable whose Fenced is closed.
func IsFenced(sb Sandbox) bool {
	f, ok := sb.(Fenceable)
	if !ok {
		return false
	}
	select {
	case <-f.Fenced():
		return true
	default:
		return false
	}
}

// Peer is another live gateway of the same runtime.
type Peer struct {
	Instance string // its instance name
	URL      string // its advertised API address (http://10.0.0.7:8080)
}

// ErrNotLocated is returned when the runtime knows no sandbox of that id.
var ErrNotLocated = errors.New("sandbox: no such sandbox in the runtime")

// Location is who serves a sandbox: this gateway (Here), another live
// gateway (Owner, reached at URL), or none (Orphan set: adopt it).
type Location struct {
	Tenant string // the Spec's Tenant; "" when it was never known
	Here   bool   // this gateway serves it
	Owner  string // the serving gateway's instance
	// URL is where the owner serves its API (its advertised address,
	// http://10.0.0.7:8080); "" when it advertises none.
	URL string
	// Orphan is set when no live gateway serves the sandbox: the caller
	// may adopt it (sandbox.Adopter) as it would an OrphanFinder's.
	Orphan *Orphan
}

// TenantRecorder is implemented by sandboxes that record their owner where
// another gateway can read it (an Orphan's Tenant). A session that takes a
// pre-started sandbox, started before its tenant was known, records it.
type TenantRecorder interface {
	RecordTenant(ctx context.Context, tenant string) error
}
