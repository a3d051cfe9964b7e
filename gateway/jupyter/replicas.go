package jupyter

import (
	"encoding/json"
	"net/http"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/labstack/echo/v4"
)

// replicaForwarding is what the API's handlers do with the other gateway
// replicas (Config.Replicas): forward a kernel's requests to the replica
// serving it, add the others' models to a list, ask them for a Jupyter
// session this one does not hold. With no Replicas (a single gateway)
// every method answers for this replica alone. Safe for concurrent use
// as its Replicas is.
type replicaForwarding struct {
	r Replicas // nil: no other replicas
}

// enabled reports whether there are other replicas to ask.
func (f replicaForwarding) enabled() bool { return f.r != nil }

// kernelMiddleware is the middleware of the routes of one kernel
// (/api/kernels/{id}...): a kernel another replica serves is that
// replica's to answer for.
func (f replicaForwarding) kernelMiddleware() []echo.MiddlewareFunc {
	if f.r == nil {
		return nil
	}
	return []echo.MiddlewareFunc{f.r.Forward(func(c echo.Context) string { return sessionIDOf(c.Param("id")) })}
}

// gather adds to local, a list of models (kernels or sessions), the other
// replicas' lists of the same request (Replicas.Gather), each model once
// (by its id).
func (f replicaForwarding) gather(c echo.Context, local []json.RawMessage) []json.RawMessage {
	if f.r == nil {
		return local
	}
	bodies, _ := f.r.Gather(c)
	type keyed struct {
		ID string `json:"id"`
	}
	seen := map[string]bool{}
	for _, m := range local {
		var k keyed
		_ = json.Unmarshal(m, &k)
		seen[k.ID] = true
	}
	for _, b := range bodies {
		var models []json.RawMessage
		if json.Unmarshal(b, &models) != nil {
			continue
		}
		for _, m := range models {
			var k keyed
			if json.Unmarshal(m, &k) != nil || k.ID == "" || seen[k.ID] {
				continue
			}
			seen[k.ID] = true
			local = append(local, m)
		}
	}
	return local
}

// elsewhere answers a request for a Jupyter session this replica does
// not hold (lookup's error, a 404) through the replica that holds it, if
// one does (Replicas.Ask); else it returns lookup's error.
func (f replicaForwarding) elsewhere(c echo.Context, lookup error) error {
	if f.r == nil || httperr.Of(lookup).Status != http.StatusNotFound {
		return lookup
	}
	handled, err := f.r.Ask(c)
	switch {
	case err != nil:
		return err
	case handled:
		return nil
	}
	return lookup
}

// toSession forwards the request, its body already read, to the replica
// serving tenant's session id (Replicas.ToSession); handled is false when
// none does or there are no other replicas.
func (f replicaForwarding) toSession(c echo.Context, id string, body []byte) (handled bool, err error) {
	if f.r == nil {
		return false, nil
	}
	return f.r.ToSession(c, id, body)
}
