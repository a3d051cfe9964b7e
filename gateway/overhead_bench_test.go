package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// BenchmarkGatewayOverhead measures what the gateway adds to an `x + 1`
// round trip: in every iteration it runs the cell once through the Go
// kernel client straight to a sandboxed kernel (no gateway: the floor)
// and once through the native /v1 WebSocket of a session of the same
// runtime, alternating so that a busy machine slows both alike. It
// reports each one's p50 and mean and the ratio of the p50s (ws/direct).
//
//	go test -run '^$' -bench GatewayOverhead -benchtime 1000x ./gateway/
func BenchmarkGatewayOverhead(b *testing.B) {
	rt := apptest.Local(b) // uids apart from the other local gateways of the package
	g := apptest.Start(b, rt, apptest.Options{})
	ctx := context.Background()

	sb, err := g.App.Runtime.Start(ctx, sandbox.Spec{ID: "0bec0bec0bec0bec0bec0bec0bec0bec"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sb.Close(context.Background()) })
	kc, err := kernel.Dial(ctx, sb.Connection(), kernel.Config{}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { kc.Close() })
	direct := func(code string) {
		got := false
		if _, err := kc.Execute(ctx, code, kernel.ExecuteOptions{}, func(ev kernel.Event) { got = got || ev.Kind == kernel.EventResult }); err != nil {
			b.Fatal(err)
		}
		if !got && strings.Contains(code, "+") {
			b.Fatal("direct: no result")
		}
	}

	s, err := g.Client(b, apptest.KeyA).CreateSession(ctx, glclient.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(g.URL, "http")+"/v1/sessions/"+s.ID+"/ws",
		http.Header{"Authorization": {"Bearer " + apptest.KeyA}})
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	b.Cleanup(func() { c.Close() })
	ws := &nativeRT{c: c}

	direct("x = 41")
	ws.run(b, "x = 41")
	for range 20 { // warm up
		direct("x + 1")
		ws.run(b, "x + 1")
	}
	var td, tw []time.Duration
	for b.Loop() {
		start := time.Now()
		direct("x + 1")
		td = append(td, time.Since(start))
		start = time.Now()
		ws.run(b, "x + 1")
		tw = append(tw, time.Since(start))
	}
	b.ReportMetric(p50(td), "direct-p50-ms")
	b.ReportMetric(p50(tw), "ws-p50-ms")
	b.ReportMetric(mean(td), "direct-ms/op")
	b.ReportMetric(mean(tw), "ws-ms/op")
	b.ReportMetric(p50(tw)/p50(td), "ws/direct")
}
