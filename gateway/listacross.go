package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/sessions"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
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

// rawPage is a page of sessions as a replica writes it, each session's
// JSON kept as it is: what a replica answers for its part, and the merged
// page.
type rawPage struct {
	Sessions  []json.RawMessage `json:"sessions"`
	NextToken *string           `json:"next_token"`
}

// listAcross answers the list for every replica of the runtime: this
// one's page and the other replicas' (bodies, their answers to the same
// request: replicas.Gather, which names in PartialHeader those that gave
// none: missing), merged in the list's order (creation, then id; or reversed) and cut
// at the page's limit. Every replica pages by the same token, so the
// merged page is exactly the first sessions after it.
func listAcross(c echo.Context, log zerolog.Logger, q sessions.ListQuery, page []sessions.Info, next string, bodies [][]byte, missing []string) error {
	limit := q.Limit
	if limit == 0 {
		limit = sessions.MaxListLimit
	}
	var items []listedSession
	more := next != ""
	seen := map[string]bool{}
	for _, in := range page {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		items = append(items, listedSession{raw: raw, id: in.ID, createdAt: in.CreatedAt})
		seen[in.ID] = true
	}
	for _, b := range bodies {
		var pg rawPage
		if json.Unmarshal(b, &pg) != nil {
			continue
		}
		more = more || pg.NextToken != nil
		for _, raw := range pg.Sessions {
			var key struct {
				ID        string    `json:"id"`
				CreatedAt time.Time `json:"created_at"`
			}
			if json.Unmarshal(raw, &key) != nil || key.ID == "" || len(key.ID) > 128 || seen[key.ID] {
				continue // a session moving between replicas is listed by both
			}
			seen[key.ID] = true
			items = append(items, listedSession{raw: raw, id: key.ID, createdAt: key.CreatedAt})
		}
	}
	slices.SortFunc(items, func(a, b listedSession) int {
		return sessions.ListOrder(a.createdAt, a.id, b.createdAt, b.id, q.Descending)
	})
	if len(items) > limit {
		items, more = items[:limit], true
	}
	out := rawPage{Sessions: make([]json.RawMessage, 0, len(items))}
	for _, in := range items {
		out.Sessions = append(out.Sessions, in.raw)
	}
	if more && len(items) > 0 {
		last := items[len(items)-1]
		tok := sessions.PageToken(last.createdAt, last.id)
		out.NextToken = &tok
	}
	if len(missing) > 0 {
		log.Warn().Strs("replicas", missing).Str("tenant", tenant.Of(c)).Msg("a list left out replicas that did not answer")
	}
	return c.JSON(http.StatusOK, out)
}
