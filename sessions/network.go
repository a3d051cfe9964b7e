package sessions

import (
	"errors"
	"sync/atomic"

	"github.com/glassroom/glassroom/egress"
	"github.com/rs/zerolog"
)

// Network is a session's network access: the destinations (egress
// patterns: "pypi.org", "*.pythonhosted.org", "api.example.com:443",
// "203.0.113.0/24") its kernel may reach through the session's egress
// proxy, except those Deny matches (checked first). The zero value is no
// network at all.
type Network struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny,omitempty"`
}

// networks admits sessions' network lists against the operator's
// ceiling and starts (or, for a restored session, resumes) their egress
// proxies. Safe for concurrent use.
type networks struct {
	egress *egress.Service
	log    zerolog.Logger
}

// admit checks a session's list against the operator's ceiling.
// An empty list is no network (the zero Policy).
func (m *networks) admit(n Network) (egress.Policy, error) {
	if len(n.Allow) == 0 {
		if len(n.Deny) > 0 {
			return egress.Policy{}, invalid("network.deny without network.allow: a session reaches nothing unless its allow list names it (deny takes destinations out of that list)")
		}
		return egress.Policy{}, nil
	}
	pol, err := m.egress.Admit(n.Allow)
	if err == nil {
		pol, err = pol.WithDeny(n.Deny)
	}
	if err != nil {
		var pe *egress.PatternError
		if errors.As(err, &pe) {
			return egress.Policy{}, &InvalidError{Reason: pe.Public(), Err: err}
		}
		return egress.Policy{}, &InvalidError{Reason: "invalid network policy", Err: err}
	}
	return pol, nil
}

// networkOf describes the allowlist of a session's proxy p (canonical
// patterns), or nil when it has none.
func networkOf(p *egress.Proxy) *Network {
	if p == nil {
		return nil
	}
	pol := p.Policy()
	n := &Network{Allow: pol.Strings()}
	if d := pol.DenyStrings(); len(d) > 0 {
		n.Deny = d
	}
	return n
}

// SetNetwork changes the session's network while it runs (E2B's
// update_network): n is admitted as at creation; new connections follow
// it at once, and the open ones it refuses are closed. A session created
// without a network has no proxy and cannot gain one (ErrNoNetwork); an
// empty allowlist refuses everything (the proxy stays, for a later
// change). The change is kept with the session's record.
func (s *Session) SetNetwork(n Network) error {
	if s.egress == nil {
		return ErrNoNetwork
	}
	pol, err := s.networks.admit(n)
	if err != nil {
		return err
	}
	closed := s.egress.SetPolicy(pol)
	s.log.Info().Strs("allow", pol.Strings()).Strs("deny", pol.DenyStrings()).Int("closed", closed).Msg("session network changed")
	s.persist()
	return nil
}

// networkNotifier returns the proxy's callback: each refused connection
// becomes a network event of the session, once it exists (the proxy starts
// before the sandbox, and nothing can connect before the kernel runs).
// Allowed connections are only logged by the proxy.
func networkNotifier(created *atomic.Pointer[Session]) func(egress.Decision) {
	return func(d egress.Decision) {
		s := created.Load()
		if s == nil || d.Allowed {
			return
		}
		s.first.publish(Event{Type: EventNetwork, Host: d.Host, Port: ptr(d.Port), Allowed: ptr(false), Reason: d.Reason})
	}
}
