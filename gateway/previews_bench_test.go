package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	glclient "github.com/glassroom/glassroom/client"
)

// BenchmarkPreviewRoundTrip measures a GET of a small page that a server
// in the sandbox (python -m http.server, HTTP/1.1, local runtime) answers
// through the preview origin: each iteration once on a kept-alive connection (a
// relay already open) and once on a new connection (a relay started in
// the sandbox for it), alternating. It reports each one's p50 and mean.
//
//	go test -run '^$' -bench PreviewRoundTrip -benchtime 300x ./gateway/
func BenchmarkPreviewRoundTrip(b *testing.B) {
	g := apptest.Start(b, apptest.Local(b), apptest.Options{Previews: true})
	ctx := context.Background()
	c := g.Client(b, apptest.KeyA)
	s, err := c.CreateSession(ctx, glclient.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.StartCommand(ctx, s.ID, "mkdir -p site && echo hi > site/index.html && exec python3 -m http.server --protocol HTTP/1.1 -d site 8200", glclient.CommandOptions{}); err != nil {
		b.Fatal(err)
	}
	p, err := c.Preview(ctx, s.ID, 8200, 0)
	if err != nil {
		b.Fatal(err)
	}
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, g.PreviewAddr)
	}
	kept := &http.Client{Transport: &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 1}}
	fresh := &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
	get := func(hc *http.Client) time.Duration {
		start := time.Now()
		resp, err := hc.Get("http://" + p.Host + "/index.html")
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "hi\n" {
			b.Fatalf("%d %q", resp.StatusCode, body)
		}
		return time.Since(start)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := kept.Get("http://" + p.Host + "/index.html"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatal("the server never answered")
		}
	}
	var tk, tf []time.Duration
	b.ResetTimer()
	for range b.N {
		tk = append(tk, get(kept))
		tf = append(tf, get(fresh))
	}
	b.StopTimer()
	b.ReportMetric(p50(tk), "keepalive-p50-ms")
	b.ReportMetric(p50(tf), "newconn-p50-ms")
	b.ReportMetric(mean(tk), "keepalive-ms/op")
	b.ReportMetric(mean(tf), "newconn-ms/op")
}
