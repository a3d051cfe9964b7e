package sessions

import (
	"encoding/base64"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Metadata bounds (CheckMetadata).
const (
	MaxMetadataKeys     = 64
	MaxMetadataKeyBytes = 64
	MaxMetadataValBytes = 512
)

// CheckMetadata refuses metadata past its bounds: at most 64 keys, each
// 1..64 bytes, each value at most 512 bytes, all valid UTF-8.
func CheckMetadata(md map[string]string) error {
	if len(md) > MaxMetadataKeys {
		return invalid("metadata: at most %d keys", MaxMetadataKeys)
	}
	for k, v := range md {
		if len(k) == 0 || len(k) > MaxMetadataKeyBytes || !utf8.ValidString(k) {
			return invalid("metadata: each key must be 1..%d bytes of UTF-8", MaxMetadataKeyBytes)
		}
		if len(v) > MaxMetadataValBytes || !utf8.ValidString(v) {
			return invalid("metadata: each value must be at most %d bytes of UTF-8", MaxMetadataValBytes)
		}
	}
	return nil
}

func copyMetadata(md map[string]string) map[string]string {
	out := make(map[string]string, len(md))
	for k, v := range md {
		out[k] = v
	}
	return out
}

// lifetimeEnd is when a lifetime d starting now ends; zero for d == 0
// (the session's default: creation + Config.MaxLifetime).
func lifetimeEnd(d time.Duration) time.Time {
	if d == 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// ListQuery selects a page of a tenant's sessions (ListPage).
type ListQuery struct {
	Metadata map[string]string // every pair must match
	// Paused selects by pause: nil both, else only sessions a client
	// paused (true) or not (false).
	Paused    *bool
	Limit     int    // 1..100; 0 is 100
	NextToken string // from the previous page; "" the first
	// Descending lists the newest first (E2B's order=desc); the default
	// is the oldest first.
	Descending bool
	Template   string    // only sessions of this template, when set
	After      time.Time // only sessions created at or after it, when set
	Before     time.Time // only sessions created at or before it, when set
}

// MaxListLimit is the largest page of ListPage.
const MaxListLimit = 100

// ListPage returns a page of tenant's sessions matching q, ordered by
// creation time then id (reversed with Descending), and the token of the
// next page ("" when this is the last). A malformed token is ErrInvalid.
func (m *Manager) ListPage(tenant string, q ListQuery) ([]Info, string, error) {
	if q.Limit == 0 {
		q.Limit = MaxListLimit
	}
	if q.Limit < 1 || q.Limit > MaxListLimit {
		return nil, "", invalid("limit must be within 1..%d", MaxListLimit)
	}
	var after time.Time
	var afterID string
	if q.NextToken != "" {
		var ok bool
		if after, afterID, ok = parseToken(q.NextToken); !ok {
			return nil, "", invalid("invalid next_token")
		}
	}
	all := m.List(tenant)
	sort.Slice(all, func(i, j int) bool {
		return ListOrder(all[i].CreatedAt, all[i].ID, all[j].CreatedAt, all[j].ID, q.Descending) < 0
	})
	out := make([]Info, 0, min(len(all), q.Limit))
	for _, in := range all {
		if q.NextToken != "" && ListOrder(in.CreatedAt, in.ID, after, afterID, q.Descending) <= 0 {
			continue
		}
		if !q.selects(in) {
			continue
		}
		if len(out) == q.Limit {
			last := out[len(out)-1]
			return out, makeToken(last.CreatedAt, last.ID), nil
		}
		out = append(out, in)
	}
	return out, "", nil
}

// ListOrder compares two sessions, by creation time then id, in the
// list's order: negative when (at, aid) comes first.
func ListOrder(at time.Time, aid string, bt time.Time, bid string, descending bool) int {
	c := at.Compare(bt)
	if c == 0 {
		c = strings.Compare(aid, bid)
	}
	if descending {
		return -c
	}
	return c
}

// selects reports whether in passes q's filters.
func (q ListQuery) selects(in Info) bool {
	switch {
	case q.Paused != nil && in.PausedByClient != *q.Paused,
		q.Template != "" && in.Template != q.Template,
		!q.After.IsZero() && in.CreatedAt.Before(q.After),
		!q.Before.IsZero() && in.CreatedAt.After(q.Before):
		return false
	}
	return matches(in.Metadata, q.Metadata)
}

func matches(md, want map[string]string) bool {
	for k, v := range want {
		if got, ok := md[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func makeToken(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(t.UnixNano(), 10) + "." + id))
}

func parseToken(tok string) (time.Time, string, bool) {
	if len(tok) > 200 {
		return time.Time{}, "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return time.Time{}, "", false
	}
	ns, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", false
	}
	return time.Unix(0, n), id, true
}

// PageToken is the next_token of a page whose last session was created
// at createdAt with id: what ListPage returns, for a caller that merges
// the pages of several gateways (the order is theirs too).
func PageToken(createdAt time.Time, id string) string { return makeToken(createdAt, id) }
