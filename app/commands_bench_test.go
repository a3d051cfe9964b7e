package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
)

// BenchmarkCommandTrue measures a command's round trip through the REST
// API: POST /v1/sessions/{id}/commands {"cmd":"true"} to its answer, on
// each runtime; it reports the p50 and p90 in ms.
func BenchmarkCommandTrue(b *testing.B) {
	for name, rt := range apptest.Runtimes() {
		b.Run(name, func(b *testing.B) {
			g := apptest.Start(b, rt(b), apptest.Options{})
			var s api.Session
			if st := g.Call(b, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{}, &s); st != http.StatusCreated {
				b.Fatalf("create: %d", st)
			}
			path := "/v1/sessions/" + s.ID + "/commands"
			var took []time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				var c api.Command
				if st := g.Call(b, bearer, "POST", path, api.RunCommandRequest{Cmd: "true"}, &c); st != http.StatusOK || *c.ExitCode != 0 {
					b.Fatalf("true: %d %+v", st, c)
				}
				took = append(took, time.Since(start))
			}
			percentiles(b, took)
		})
	}
}
