package client_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/glassroom/glassroom/client"
)

// The Go example of docs/clients.md (compiled, not run: it needs a
// gateway); the README shows its first lines.
func ExampleClient() {
	ctx, key, csv := context.Background(), "3f9c…", "region,units\nnorth,10\n"
	c, err := client.New(client.Config{BaseURL: "http://127.0.0.1:8888", APIKey: key})
	if err != nil {
		return
	}
	s, err := c.CreateSession(ctx, client.CreateOptions{IdleTimeout: 10 * time.Minute})
	if err != nil {
		return
	}
	defer c.DeleteSession(context.Background(), s.ID)
	x, err := c.Execute(ctx, s.ID, "x = 41\nx + 1", client.ExecuteOptions{})
	if err != nil {
		return
	}
	fmt.Println(x.Result.Text("text/plain")) // 42
	if _, err := c.Run(ctx, s.ID, "name = input('who? ')\nprint('hi', name)", client.RunOptions{
		OnEvent: func(ev client.Event) {
			if ev.Type == client.EventStream {
				fmt.Print(ev.Text) // streamed as it is printed
			}
		},
		Input: func(ctx context.Context, prompt string, password bool) (string, error) { return "ada", nil },
	}); err != nil {
		return
	}
	if _, err := c.WriteFile(ctx, s.ID, "data/sales.csv", strings.NewReader(csv), int64(len(csv))); err != nil {
		return
	}
}

// Languages and contexts (docs/clients.md, compiled, not run): R beside
// Python in one session, and a second Python context with variables of
// its own.
func ExampleClient_CreateContext() {
	ctx, key := context.Background(), "3f9c…"
	c, err := client.New(client.Config{BaseURL: "http://127.0.0.1:8888", APIKey: key})
	if err != nil {
		return
	}
	kernels, err := c.Kernels(ctx) // python3 first, then r, javascript, typescript, bash as installed
	if err != nil {
		return
	}
	fmt.Println(len(kernels) > 0)
	s, err := c.CreateSession(ctx, client.CreateOptions{}) // its first context runs Python
	if err != nil {
		return
	}
	defer c.DeleteSession(context.Background(), s.ID)
	// R's default context starts on first use and shares the session's files.
	r, err := c.Execute(ctx, s.ID, `write.csv(data.frame(n = 1:3), "n.csv")`+"\ncat(sum(1:3))", client.ExecuteOptions{Language: "r"})
	if err != nil {
		return
	}
	fmt.Println(r.Stdout) // 6
	scratch, err := c.CreateContext(ctx, s.ID, client.ContextOptions{Language: "python", Cwd: "scratch"})
	if err != nil {
		return
	}
	if _, err := c.Execute(ctx, s.ID, "x = 1", client.ExecuteOptions{Context: scratch.ID}); err != nil {
		return
	}
	_ = c.RestartContext(ctx, s.ID, scratch.ID)
	_ = c.DeleteContext(ctx, s.ID, scratch.ID)
}
