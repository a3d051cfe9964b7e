package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/sessions"
	"github.com/labstack/echo/v4"
)

// PartialHeader names, on a list that answers for every replica, the
// replicas that did not answer in time: their sessions are missing from it.
const PartialHeader = "Glassroom-Partial"

// Bounds of asking the other replicas for their part of a list.
const (
	peerListTimeout = 5 * time.Second
	maxPeerList     = 8 << 20 // a page of 100 sessions is far less
)

// listedSession is a session of a merged list: its JSON as its replica
// wrote it, and the keys of the list's order.
type listedSession struct {
	raw       json.RawMessage
	id        string
	createdAt time.Time
}

// acrossPage is GET /v1/sessions answered for every replica.
type acrossPage struct {
	Sessions  []json.RawMessage `json:"sessions"`
	NextToken *string           `json:"next_token"`
}

// peerPage is what a replica answers for its own part.
type peerPage struct {
	Sessions  []json.RawMessage `json:"sessions"`
	NextToken *string           `json:"next_token"`
}

// listAcross answers the list for every replica of the runtime: this
// one's page and each other's (asked with the client's own credentials,
// marked forwarded, so that each answers for itself and checks them),
// merged in the list's order (creation, then id) and cut at the page's
// limit. Every replica pages by the same token, so the merged page is
// exactly the first sessions after it. A replica that does not answer
// within peerListTimeout is left out and named in PartialHeader.
func (s *Server) listAcross(c echo.Context, q sessions.ListQuery, page []sessions.Info, next string, peers []sessions.Elsewhere) error {
	limit := q.Limit
	if limit == 0 {
		limit = sessions.MaxListLimit
	}
	var items []listedSession
	more := next != ""
	for _, in := range page {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		items = append(items, listedSession{raw: raw, id: in.ID, createdAt: in.CreatedAt})
	}
	type answer struct {
		peer  string
		items []listedSession
		more  bool
		ok    bool
	}
	answers := make([]answer, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() { // joined below; bounded by peerListTimeout
			defer wg.Done()
			items, more, ok := s.peerList(c.Request(), p)
			answers[i] = answer{peer: p.Owner, items: items, more: more, ok: ok}
		}()
	}
	wg.Wait()
	var missing []string
	seen := map[string]bool{}
	for _, in := range items {
		seen[in.id] = true
	}
	for _, a := range answers {
		if !a.ok {
			missing = append(missing, a.peer)
			continue
		}
		more = more || a.more
		for _, in := range a.items {
			if !seen[in.id] { // a session moving between replicas, listed by both
				seen[in.id] = true
				items = append(items, in)
			}
		}
	}
	slices.SortFunc(items, func(a, b listedSession) int {
		if c := a.createdAt.Compare(b.createdAt); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	if len(items) > limit {
		items, more = items[:limit], true
	}
	out := acrossPage{Sessions: make([]json.RawMessage, 0, len(items))}
	for _, in := range items {
		out.Sessions = append(out.Sessions, in.raw)
	}
	if more && len(items) > 0 {
		last := items[len(items)-1]
		tok := sessions.PageToken(last.createdAt, last.id)
		out.NextToken = &tok
	}
	if len(missing) > 0 {
		c.Response().Header().Set(PartialHeader, strings.Join(missing, ","))
		s.log.Warn().Strs("replicas", missing).Str("tenant", tenant.Of(c)).Msg("a list left out replicas that did not answer")
	}
	return c.JSON(http.StatusOK, out)
}

// peerList asks replica p for its part of the list the client asked (the
// same query, its own credentials). It reports whether p answered.
func (s *Server) peerList(req *http.Request, p sessions.Elsewhere) (items []listedSession, more, ok bool) {
	ctx, cancel := context.WithTimeout(req.Context(), peerListTimeout)
	defer cancel()
	out, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(p.URL, "/")+"/v1/sessions?"+req.URL.RawQuery, nil)
	if err != nil {
		return nil, false, false
	}
	out.Header.Set("Authorization", req.Header.Get("Authorization"))
	out.Header.Set(ForwardedHeader, s.fwd.instance)
	resp, err := s.fwd.transport.RoundTrip(out)
	if err != nil {
		return nil, false, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, false, false
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPeerList+1))
	if err != nil || len(body) > maxPeerList {
		return nil, false, false
	}
	var pg peerPage
	if json.Unmarshal(body, &pg) != nil {
		return nil, false, false
	}
	for _, raw := range pg.Sessions {
		var key struct {
			ID        string    `json:"id"`
			CreatedAt time.Time `json:"created_at"`
		}
		if json.Unmarshal(raw, &key) != nil || key.ID == "" || len(key.ID) > 128 {
			continue
		}
		items = append(items, listedSession{raw: raw, id: key.ID, createdAt: key.CreatedAt})
	}
	return items, pg.NextToken != nil, true
}
