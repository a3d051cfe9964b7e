package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// MCPMaxUpload bounds upload_file over /mcp: MCP carries files base64 in
// one JSON body, held in memory.
const MCPMaxUpload = 10 << 20

// routeMCP serves MCP's streamable HTTP transport at /mcp, behind the same
// key authentication as /v1, with the handler Config.MCP builds over this
// server's InProcessTransport.
func (s *Server) routeMCP(e *echo.Echo) {
	if s.cfg.MCP == nil {
		return
	}
	h, err := s.cfg.MCP(s.InProcessTransport())
	s.mcp = h
	var handler echo.HandlerFunc
	if err != nil { // cannot happen with a validated Config; fail loudly per request
		s.log.Error().Err(err).Msg("mcp handler unavailable")
		handler = func(echo.Context) error { return fmt.Errorf("mcp: %w", err) }
	} else {
		handler = echo.WrapHandler(h)
	}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		e.Add(m, "/mcp", handler, s.authenticate)
	}
}

// CloseMCP ends the MCP handler's sessions (their open streams), when it
// has a Close method; Serve calls it on shutdown, before waiting for
// handlers. Safe to call more than once.
func (s *Server) CloseMCP() {
	if c, ok := s.mcp.(io.Closer); ok {
		_ = c.Close()
	}
}

// InProcessTransport returns an http.RoundTripper that serves each request
// with this server's own handler, in-process: no socket, same
// authentication, limits and routes as over the network. Responses stream
// through a pipe (the caller must close the body, as with any transport).
// WebSocket upgrades go through its DialContext instead (give it to a
// WebSocket dialer as its NetDialContext).
func (s *Server) InProcessTransport() http.RoundTripper { return inProcess{h: s.echo} }

type inProcess struct{ h http.Handler }

// DialContext returns a connection to this server's handler, in-process
// (one end of a net.Pipe; addr is ignored): whatever is written to it is
// read as HTTP/1.1, so a WebSocket client (gorilla's Dialer with this as
// NetDialContext) reaches /v1/sessions/{id}/ws without a socket. The
// connection is served by its own goroutine, which ends when the
// connection is closed (by the caller, or by the handler after an
// upgrade). The caller must close the connection.
func (t inProcess) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, srv := net.Pipe()
	hs := &http.Server{Handler: t.h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	// Serve accepts the one connection, starts its goroutine and returns
	// at the next Accept: the connection's goroutine owns it from then on.
	_ = hs.Serve(&oneConn{c: loopbackConn{srv}})
	return loopbackConn{c}, nil
}

// oneConn is a listener that accepts one connection, then reports closed.
type oneConn struct {
	mu sync.Mutex
	c  net.Conn
}

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.c
	l.c = nil
	if c == nil {
		return nil, net.ErrClosed
	}
	return c, nil
}

func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return loopbackAddr{} }

// loopbackConn is a pipe end that reports loopback addresses, as the
// gateway's handlers expect a TCP peer.
type loopbackConn struct{ net.Conn }

func (loopbackConn) LocalAddr() net.Addr  { return loopbackAddr{} }
func (loopbackConn) RemoteAddr() net.Addr { return loopbackAddr{} }

type loopbackAddr struct{}

func (loopbackAddr) Network() string { return "tcp" }
func (loopbackAddr) String() string  { return "127.0.0.1:0" }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.RequestURI = req.URL.RequestURI()
	r.RemoteAddr = "127.0.0.1:0"
	r.Host = req.URL.Host
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeResponse{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() { // owned by the response body: it ends when the handler returns
		defer r.Body.Close()
		defer w.finish()
		defer func() {
			if p := recover(); p != nil { // echo recovers handler panics; this covers echo itself
				w.WriteHeader(http.StatusInternalServerError)
			}
		}()
		t.h.ServeHTTP(w, r)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	resp := &http.Response{
		Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: pr, ContentLength: -1, Request: req,
	}
	if n, err := strconv.ParseInt(w.sent.Get("Content-Length"), 10, 64); err == nil {
		resp.ContentLength = n
	}
	if req.Method == http.MethodHead {
		_ = pr.Close()
		resp.Body = http.NoBody
	}
	return resp, nil
}

// pipeResponse is the http.ResponseWriter of an in-process request: the
// header is handed over at the first write, the body streams into a pipe.
type pipeResponse struct {
	header http.Header
	pw     *io.PipeWriter
	once   sync.Once
	status int
	sent   http.Header
	ready  chan struct{}
}

func (w *pipeResponse) Header() http.Header { return w.header }

func (w *pipeResponse) WriteHeader(code int) {
	if code < 200 { // informational answers are not the response
		return
	}
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush is a no-op: every write already reaches the reader.
func (w *pipeResponse) Flush() {}

func (w *pipeResponse) finish() {
	w.WriteHeader(http.StatusOK)
	_ = w.pw.Close()
}
