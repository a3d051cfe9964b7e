package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/sessions"
	"github.com/labstack/echo/v4"
)

// replicas is the Jupyter API's view of the other gateway replicas
// (jupyter.Replicas): a kernel's requests go to the replica serving its
// session, lists gather every replica's, and a Jupyter session this
// replica does not hold is asked of the others. On a runtime whose
// sessions one gateway serves, there are none and every call is local.
type replicas struct{ s *Server }

// Forward implements jupyter.Replicas: forwardElsewhere with the
// session id idOf gives.
func (r replicas) Forward(idOf func(echo.Context) string) echo.MiddlewareFunc {
	return r.s.forwardSession(idOf)
}

// peers returns the other replicas to ask for a request that is not a
// forwarded one already (a replica asked answers for itself).
func (r replicas) peers(c echo.Context) []sessions.Elsewhere {
	if c.Request().Header.Get(ForwardedHeader) != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), peerListTimeout)
	defer cancel()
	peers, err := r.s.mgr.Peers(ctx)
	if err != nil {
		r.s.log.Warn().Err(err).Msg("cannot list the other replicas: answering for this one")
		c.Response().Header().Set(PartialHeader, "*")
	}
	return peers
}

// peerRequest is the request c received, for replica p: the same method,
// path and query, the client's credentials and content type, body, and
// marked forwarded.
func (r replicas) peerRequest(ctx context.Context, c echo.Context, p sessions.Elsewhere, body []byte) (*http.Request, error) {
	in := c.Request()
	out, err := http.NewRequestWithContext(ctx, in.Method, strings.TrimSuffix(p.URL, "/")+in.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for _, h := range []string{"Authorization", "Content-Type", "Accept"} {
		if v := in.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	out.Header.Set(ForwardedHeader, r.s.fwd.instance)
	return out, nil
}

// Gather implements jupyter.Replicas: the request (a GET) asked of every
// other replica at once, each bounded by peerListTimeout; the bodies of
// the 200 answers (at most maxPeerList each), and the replicas that gave
// none.
func (r replicas) Gather(c echo.Context) (bodies [][]byte, missing []string) {
	peers := r.peers(c)
	got := make([][]byte, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() { // joined below; bounded by peerListTimeout
			defer wg.Done()
			ctx, cancel := context.WithTimeout(c.Request().Context(), peerListTimeout)
			defer cancel()
			req, err := r.peerRequest(ctx, c, p, nil)
			if err != nil {
				return
			}
			resp, err := r.s.fwd.transport.RoundTrip(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, maxPeerList+1))
			if err == nil && resp.StatusCode == http.StatusOK && len(b) <= maxPeerList {
				got[i] = b
			}
		}()
	}
	wg.Wait()
	for i, b := range got {
		if b == nil {
			missing = append(missing, peers[i].Owner)
			continue
		}
		bodies = append(bodies, b)
	}
	if len(missing) > 0 {
		c.Response().Header().Set(PartialHeader, strings.Join(missing, ","))
	}
	return bodies, missing
}

// errPeerBody: a request's body was larger than a replica may be sent.
var errPeerBody = errors.New("gateway: request body too large to ask the other replicas")

// Ask implements jupyter.Replicas: the request (its body read here, at
// most maxPeerList) sent to each other replica in turn; the first answer
// that is not a 404 is relayed to the client as it is. handled is false
// when every replica answered 404, or none could be asked.
func (r replicas) Ask(c echo.Context) (handled bool, err error) {
	peers := r.peers(c)
	if len(peers) == 0 {
		return false, nil
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxPeerList+1))
	if err != nil {
		return false, err
	}
	if len(body) > maxPeerList {
		return false, errPeerBody
	}
	for _, p := range peers {
		if r.relay(c, p, body) {
			return true, nil
		}
	}
	return false, nil
}

// relay sends the request to p and, unless p answers 404 or cannot be
// reached, writes p's answer (status, content type, location, body) to
// the client; it reports whether it did.
func (r replicas) relay(c echo.Context, p sessions.Elsewhere, body []byte) bool {
	ctx, cancel := context.WithTimeout(c.Request().Context(), locateTimeout)
	defer cancel()
	req, err := r.peerRequest(ctx, c, p, body)
	if err != nil {
		return false
	}
	resp, err := r.s.fwd.transport.RoundTrip(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxPeerList+1))
	if err != nil || len(b) > maxPeerList {
		return false
	}
	for _, h := range []string{"Content-Type", "Location"} {
		if v := resp.Header.Get(h); v != "" {
			c.Response().Header().Set(h, v)
		}
	}
	c.Response().WriteHeader(resp.StatusCode)
	_, _ = c.Response().Write(b)
	return true
}

// ToSession implements jupyter.Replicas: a request (whose body, already
// read, is body) about tenant's session id, sent to the replica that
// serves that session when another one does. handled is false when this
// replica serves it, or no replica does.
func (r replicas) ToSession(c echo.Context, id string, body []byte) (handled bool, err error) {
	if c.Request().Header.Get(ForwardedHeader) != "" {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), locateTimeout)
	_, where, err := r.s.mgr.Locate(ctx, tenant.Of(c), id)
	cancel()
	if err != nil || where.URL == "" {
		return false, nil //nolint:nilerr // not found elsewhere either: the caller answers as it would have
	}
	c.Request().Body = io.NopCloser(bytes.NewReader(body))
	c.Request().ContentLength = int64(len(body))
	return true, r.s.forward(c, id, where)
}
