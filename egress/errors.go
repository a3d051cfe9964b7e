package egress

import "errors"

// ErrPolicy is matched (errors.Is) by every *PatternError.
var ErrPolicy = errors.New("egress: invalid network policy")

// ErrClosed is returned by Start after the service's proxies were closed
// and by a closed proxy.
var ErrClosed = errors.New("egress: closed")

// PatternError is an allowlist the proxy refuses: a malformed pattern, or
// one beyond the operator's ceiling. Pattern names it (canonical when it
// parsed); Public is safe to show the client.
type PatternError struct {
	Pattern string
	Reason  string
	List    string // the request's field: "network.allow" ("" too) or "network.deny"
}

func (e *PatternError) Error() string { return "egress: " + e.Public() }

// Public says which pattern was refused and why.
func (e *PatternError) Public() string {
	list := e.List
	if list == "" {
		list = "network.allow"
	}
	if e.Pattern == "" {
		return list + ": " + e.Reason
	}
	return list + " " + quote(e.Pattern) + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrPolicy) true.
func (e *PatternError) Unwrap() error { return ErrPolicy }
