package egress_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/egress/egresstest"
)

// BenchmarkRequest compares a small GET to a loopback upstream made
// directly with the same GET through a session's proxy (plain HTTP, a new
// connection each time, as the proxy closes after each request).
func BenchmarkRequest(b *testing.B) {
	u0, _ := newUpstream(b)
	up := u0.port
	for _, through := range []bool{false, true} {
		name := "direct"
		if through {
			name = "proxy"
		}
		b.Run(name, func(b *testing.B) {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			u := fmt.Sprintf("http://127.0.0.1:%d/", up)
			if through {
				h := startProxy(b, egress.Config{AllowPrivate: loopback, ConnRate: 1e6, MaxConns: 64}, fmt.Sprintf("allowed.test:%d", up))
				c = h.client(nil)
				u = fmt.Sprintf("http://allowed.test:%d/", up)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := c.Get(u)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkTunnel measures bytes relayed through one CONNECT tunnel with
// the bandwidth limit out of the way.
func BenchmarkTunnel(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() { // a sink upstream
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(io.Discard, c)
		c.Close()
	}()
	h := startProxy(b, egress.Config{AllowPrivate: loopback, RateBytes: 1 << 40}, "allowed.test:*")
	c, err := egresstest.Dial(context.Background(), h.proxy.Socket())
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", ln.Addr().(*net.TCPAddr).Port)
	buf := make([]byte, 39) // "HTTP/1.1 200 Connection established\r\n\r\n"
	if _, err := io.ReadFull(c, buf); err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c.Close()
	h.proxy.Close()
	<-done
}
