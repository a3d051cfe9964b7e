package client_test

import (
	"context"
	"testing"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/client"
)

// BenchmarkRoundTrip measures `x + 1` through the client (local runtime):
// one REST call, a Run on a fresh WebSocket, and a Run on an open Conn.
func BenchmarkRoundTrip(b *testing.B) {
	g := apptest.Start(b, apptest.Local(b), apptest.Options{})
	c := g.Client(b, apptest.KeyA)
	ctx := context.Background()
	s, err := c.CreateSession(ctx, client.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	c.Execute(ctx, s.ID, "x = 41", client.ExecuteOptions{})
	check := func(x *client.Execution, err error) {
		if err != nil || x.Result.Text("text/plain") != "42" {
			b.Fatalf("%+v %v", x, err)
		}
	}
	b.Run("Execute", func(b *testing.B) {
		for range b.N {
			check(c.Execute(ctx, s.ID, "x + 1", client.ExecuteOptions{}))
		}
	})
	b.Run("Run", func(b *testing.B) {
		for range b.N {
			check(c.Run(ctx, s.ID, "x + 1", client.RunOptions{}))
		}
	})
	b.Run("ConnRun", func(b *testing.B) {
		k, err := c.Connect(ctx, s.ID, client.ConnectOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer k.Close()
		for range b.N {
			check(k.Run(ctx, "x + 1", client.RunOptions{}))
		}
	})
}
