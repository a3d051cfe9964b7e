package sessions

import (
	"slices"
	"unicode/utf8"

	"github.com/glassroom/glassroom/sessionstore"
)

// JupyterSession is a Jupyter Server session (the gateway's /api/sessions):
// a notebook's, console's or file's use of a session's first kernel, with
// the id, path, name and type its Jupyter client gave it. A session holds
// the Jupyter sessions whose kernel it is (JupyterSessions), keeps them in
// its store record (they come back with it after a gateway restart) and
// loses them when it ends.
type JupyterSession = sessionstore.JupyterSession

// Bounds on a session's Jupyter sessions (CheckJupyterSessions).
const (
	// MaxJupyterSessions bounds the Jupyter sessions of one kernel.
	MaxJupyterSessions = 32
	// MaxJupyterIDBytes bounds JupyterSession.ID.
	MaxJupyterIDBytes = 64
	// MaxJupyterPathBytes bounds JupyterSession.Path.
	MaxJupyterPathBytes = 4096
	// MaxJupyterNameBytes bounds JupyterSession.Name.
	MaxJupyterNameBytes = 1024
	// MaxJupyterTypeBytes bounds JupyterSession.Type.
	MaxJupyterTypeBytes = 64
)

// CheckJupyterSessions refuses a list of Jupyter sessions past its bounds
// (ErrInvalid): at most MaxJupyterSessions, each with a non-empty id of
// at most MaxJupyterIDBytes, unique in the list, and a path, name and
// type within their bounds, all valid UTF-8.
func CheckJupyterSessions(list []JupyterSession) error {
	if len(list) > MaxJupyterSessions {
		return invalid("at most %d Jupyter sessions per kernel", MaxJupyterSessions)
	}
	for i, js := range list {
		if err := CheckJupyterSession(js); err != nil {
			return err
		}
		for _, other := range list[:i] {
			if other.ID == js.ID {
				return invalid("Jupyter session %s listed twice", js.ID)
			}
		}
	}
	return nil
}

// CheckJupyterSession refuses one Jupyter session past its bounds
// (ErrInvalid).
func CheckJupyterSession(js JupyterSession) error {
	for _, f := range []struct {
		what, v  string
		max      int
		nonEmpty bool
	}{
		{"id", js.ID, MaxJupyterIDBytes, true},
		{"path", js.Path, MaxJupyterPathBytes, false},
		{"name", js.Name, MaxJupyterNameBytes, false},
		{"type", js.Type, MaxJupyterTypeBytes, false},
	} {
		if len(f.v) > f.max || !utf8.ValidString(f.v) {
			return invalid("Jupyter session %s: at most %d bytes of UTF-8", f.what, f.max)
		}
		if f.nonEmpty && f.v == "" {
			return invalid("Jupyter session %s is empty", f.what)
		}
	}
	return nil
}

// JupyterSessions returns a copy of the Jupyter sessions whose kernel is
// this session's, in the order SetJupyterSessions gave them.
func (s *Session) JupyterSessions() []JupyterSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.jupyterSessions)
}

// SetJupyterSessions replaces the session's Jupyter sessions with list
// (checked by CheckJupyterSessions: ErrInvalid, and nothing changes) and
// writes the session's record to the store before it returns. Only a
// session's first context holds Jupyter sessions (ErrInvalid on another).
// It is safe for concurrent use, but a read-modify-write of the list
// (JupyterSessions, then SetJupyterSessions) is not atomic: the Jupyter
// face serializes its changes itself.
func (s *Session) SetJupyterSessions(list []JupyterSession) error {
	if err := CheckJupyterSessions(list); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closeReason != "" {
		s.mu.Unlock()
		return ErrNotFound
	}
	s.jupyterSessions = slices.Clone(list)
	s.mu.Unlock()
	s.persist()
	return nil
}

// restoredJupyterSessions is the Jupyter sessions of a stored record,
// none when the record's (not trusted) fail CheckJupyterSessions.
func restoredJupyterSessions(list []JupyterSession) ([]JupyterSession, error) {
	if err := CheckJupyterSessions(list); err != nil {
		return nil, err
	}
	return slices.Clone(list), nil
}
