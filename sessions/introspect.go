package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Completion is the kernel's answer to a complete request. Cursor
// positions count Unicode code points, as in the Jupyter protocol (≥ 5.2).
type Completion struct {
	Matches     []string         `json:"matches"`
	CursorStart int              `json:"cursor_start"`
	CursorEnd   int              `json:"cursor_end"`
	Types       []CompletionType `json:"types,omitempty"`
}

// CompletionType describes one match when the kernel tells its kind.
type CompletionType struct {
	Text      string `json:"text"`
	Type      string `json:"type"`
	Start     int    `json:"start"`
	End       int    `json:"end"`
	Signature string `json:"signature,omitempty"`
}

// Inspection is the kernel's answer to an inspect request: a MIME bundle
// (text/plain carries ANSI colours) when found.
type Inspection struct {
	Found    bool            `json:"found"`
	Data     json.RawMessage `json:"data"`
	Metadata json.RawMessage `json:"metadata"`
}

// Bounds on what a kernel may return for one introspection request.
const (
	maxMatches     = 1000
	maxMatchBytes  = 1024
	introspectWait = 30 * time.Second
)

func (s *Session) checkCursor(code string, cursor int) error {
	if len(code) > s.cfg.MaxCodeBytes {
		return invalid("code of %d bytes exceeds %d", len(code), s.cfg.MaxCodeBytes)
	}
	if n := utf8.RuneCountInString(code); cursor < 0 || cursor > n {
		return invalid("cursor_pos %d outside 0..%d (code points)", cursor, n)
	}
	return nil
}

// Complete asks the kernel for completions of code at cursor. It does not
// wait in the execution queue: the kernel answers between executions (a
// busy kernel answers when the running cell ends). It blocks until the
// reply, ctx's end, or 30 s. Safe for concurrent use.
func (s *Session) Complete(ctx context.Context, code string, cursor int) (*Completion, error) {
	if err := s.checkCursor(code, cursor); err != nil {
		return nil, err
	}
	s.Touch()
	ctx, cancel := context.WithTimeout(ctx, introspectWait)
	defer cancel()
	release, err := s.pause.use(ctx)
	if err != nil {
		return nil, fmt.Errorf("sessions: complete: %w", err)
	}
	defer release()
	raw, err := s.kernelClient().Complete(ctx, code, cursor)
	if err != nil {
		return nil, fmt.Errorf("sessions: complete: %w", err)
	}
	var r struct {
		Matches     []string `json:"matches"`
		CursorStart int      `json:"cursor_start"`
		CursorEnd   int      `json:"cursor_end"`
		Metadata    struct {
			Types []CompletionType `json:"_jupyter_types_experimental"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("sessions: complete: malformed reply: %w", err)
	}
	out := &Completion{Matches: []string{}, CursorStart: r.CursorStart, CursorEnd: r.CursorEnd}
	n := utf8.RuneCountInString(code)
	if out.CursorStart < 0 || out.CursorStart > n || out.CursorEnd < out.CursorStart || out.CursorEnd > n {
		out.CursorStart, out.CursorEnd = cursor, cursor
	}
	for _, m := range r.Matches {
		if len(out.Matches) == maxMatches {
			break
		}
		if len(m) <= maxMatchBytes {
			out.Matches = append(out.Matches, m)
		}
	}
	for _, t := range r.Metadata.Types {
		if len(out.Types) == maxMatches {
			break
		}
		if len(t.Text) <= maxMatchBytes && len(t.Type) <= 64 && len(t.Signature) <= maxMatchBytes {
			out.Types = append(out.Types, t)
		}
	}
	return out, nil
}

// Inspect asks the kernel for help on the name at cursor (detail 0: the
// docstring, 1: the source too). Like Complete, it bypasses the execution
// queue and blocks until the reply, ctx's end, or 30 s.
func (s *Session) Inspect(ctx context.Context, code string, cursor, detail int) (*Inspection, error) {
	if err := s.checkCursor(code, cursor); err != nil {
		return nil, err
	}
	if detail != 0 && detail != 1 {
		return nil, invalid("detail_level must be 0 or 1")
	}
	s.Touch()
	ctx, cancel := context.WithTimeout(ctx, introspectWait)
	defer cancel()
	release, err := s.pause.use(ctx)
	if err != nil {
		return nil, fmt.Errorf("sessions: inspect: %w", err)
	}
	defer release()
	raw, err := s.kernelClient().Inspect(ctx, code, cursor, detail)
	if err != nil {
		return nil, fmt.Errorf("sessions: inspect: %w", err)
	}
	var r struct {
		Found    bool            `json:"found"`
		Data     json.RawMessage `json:"data"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("sessions: inspect: malformed reply: %w", err)
	}
	var bundle map[string]json.RawMessage
	if json.Unmarshal(r.Data, &bundle) != nil || bundle == nil {
		r.Data = json.RawMessage("{}")
	}
	return &Inspection{Found: r.Found, Data: r.Data, Metadata: nonNullJSON(r.Metadata)}, nil
}

// SetIdleTimeout changes how long the session may stay idle before it is
// deleted (1 s up to Config.MaxIdleTimeout), counting from now.
func (s *Session) SetIdleTimeout(d time.Duration) error {
	if d < time.Second || d > s.cfg.MaxIdleTimeout {
		return invalid("idle timeout must be within 1s..%v", s.cfg.MaxIdleTimeout)
	}
	s.mu.Lock()
	s.idle = d
	s.lastActive = time.Now()
	s.mu.Unlock()
	return nil
}
