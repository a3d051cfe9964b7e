package sessions

import (
	"maps"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// State is a session's kernel state.
type State string

// Info is the public description of a session.
type Info struct {
	ID           string         `json:"id"`
	State        State          `json:"state"`
	Runtime      string         `json:"runtime"`
	CreatedAt    time.Time      `json:"created_at"`
	ExpiresAt    time.Time      `json:"expires_at"`
	IdleTimeoutS int            `json:"idle_timeout_s"`
	Queued       int            `json:"queued"`
	Limits       sandbox.Limits `json:"limits"`
	Network      *Network       `json:"network,omitempty"` // nil: no network
	// Paused: the idle kernel is frozen (Config.PauseAfter); the next
	// request thaws it in milliseconds, variables intact.
	Paused bool `json:"paused"`
	// Language is the first context's kernel (sandbox.KernelSpec.Name).
	Language string `json:"language"`
	// Template is the template the session was created from.
	Template string `json:"template"`
	// Metadata is the client's, as given at creation ({} when none).
	Metadata map[string]string `json:"metadata"`
	// EndAt is when the session's lifetime ends (CreateOptions.Lifetime,
	// SetLifetime); ExpiresAt is the earlier of it and idle expiry.
	EndAt time.Time `json:"end_at"`
	// PausedByClient: a client paused the session (Pause; E2B's
	// pause): it stays frozen until resumed. The idle freeze (Paused
	// alone) is transparent: to E2B's SDKs that session is running.
	PausedByClient bool `json:"paused_by_client"`
	// PreviewHost is set by the gateway that serves previews: the preview
	// of port P is at {P}-{PreviewHost}, a host that carries its grant.
	PreviewHost string `json:"preview_host,omitempty"`
	// Volumes are the volumes it mounts: name → path in the sandbox.
	Volumes map[string]string `json:"volumes,omitempty"`
	// AccessToken is set by the gateway on a session's creation and
	// lookup: the session's own credential (api.Session.AccessToken).
	AccessToken string `json:"access_token,omitempty"`
	// PrivatePreviews: its preview host carries no grant
	// (CreateOptions.PrivatePreviews); TrafficAccessToken, set by the
	// gateway where AccessToken is, then grants its previews.
	PrivatePreviews    bool   `json:"private_previews,omitempty"`
	TrafficAccessToken string `json:"traffic_access_token,omitempty"`
	// Lifecycle is the session's when it pauses at its timeout (nil when
	// it ends then); PausedAtTimeout: it is paused so now.
	Lifecycle       *Lifecycle `json:"lifecycle,omitempty"`
	PausedAtTimeout bool       `json:"paused_at_timeout,omitempty"`
	// Restore is set by the gateway in the answer that creates the
	// session from a snapshot (Snapshots.CreateFrom).
	Restore *RestoreReport `json:"restore,omitempty"`
	// Hibernated: the session is hibernated (hibernate.go).
	Hibernated bool `json:"hibernated,omitempty"`
}

// Session states.
const (
	StateIdle       State = "idle"
	StateBusy       State = "busy"
	StateRestarting State = "restarting"
	StateDead       State = "dead"
	// StateHibernated: the session's sandbox is gone, its state is in a
	// snapshot it wakes from (hibernate.go).
	StateHibernated State = "hibernated"
)

// Info describes the session now.
func (s *Session) Info() Info {
	paused := s.pause.paused() // may wait for a freeze in progress: not under s.mu
	held := s.pause.isHeld()
	s.mu.Lock()
	defer s.mu.Unlock()
	exp := s.lastActive.Add(s.idle)
	if held || s.endAt.Before(exp) { // no idle expiry while a client holds it paused
		exp = s.endAt
	}
	md := make(map[string]string, len(s.metadata))
	for k, v := range s.metadata {
		md[k] = v
	}
	tmpl := s.template
	if tmpl == "" {
		tmpl = TemplateDefault
	}
	var lc *Lifecycle
	if s.lifecycle.OnTimeout == OnTimeoutPause {
		lc = &Lifecycle{OnTimeout: OnTimeoutPause, AutoResume: s.lifecycle.AutoResume, KeepMemory: s.lifecycle.KeepMemory}
	}
	return Info{
		Lifecycle: lc, PausedAtTimeout: held && s.pause.atTimeout.Load(),
		ID: s.id, State: s.first.State(), Runtime: s.runtime, CreatedAt: s.created,
		ExpiresAt: exp, IdleTimeoutS: int(s.idle / time.Second),
		Queued: int(s.first.queued.Load()), Limits: s.sandbox.Limits(), Network: networkOf(s.egress), Paused: paused || held, Language: s.first.kernel,
		Template: tmpl, Metadata: md, EndAt: s.endAt, PausedByClient: held, Volumes: maps.Clone(s.volumes), PrivatePreviews: s.privatePreviews,
	}
}
