package client_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/sessions"
)

// TestContexts drives the context and language calls against a real
// gateway on each runtime: Kernels, a session whose first kernel is each
// installed language, Execute in a language's default context and in a
// context of its own, over REST and the WebSocket, completion in a
// context, interrupting one context while another runs, restart and
// delete.
func TestContexts(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{Sessions: sessions.Config{InterruptGrace: time.Second}})
			c := g.Client(t, apptest.KeyA)
			ctx := ctxT(t, 5*time.Minute)

			kernels, err := c.Kernels(ctx)
			if err != nil || len(kernels) == 0 || kernels[0].Name != "python3" || kernels[0].Language != "python" || kernels[0].DisplayName == "" {
				t.Fatalf("kernels: %+v %v", kernels, err)
			}
			if _, err := c.CreateSession(ctx, client.CreateOptions{Language: "cobol"}); !errors.Is(err, client.ErrBadRequest) {
				t.Fatalf("a session in cobol: %v", err)
			}

			for _, lang := range apptest.Languages() {
				t.Run("first kernel "+lang, func(t *testing.T) {
					g.NeedKernel(t, lang)
					s, err := c.CreateSession(ctx, client.CreateOptions{Language: lang})
					if err != nil {
						t.Fatal(err)
					}
					defer c.DeleteSession(ctx, s.ID)
					if s.Language != lang {
						t.Fatalf("session language %q, want %q", s.Language, lang)
					}
					x, err := c.Execute(ctx, s.ID, apptest.Print42(lang), client.ExecuteOptions{})
					if err != nil || x.Status != client.StatusOK || x.Stdout != "42\n" {
						t.Fatalf("%s in its first context: %+v %v", lang, x, err)
					}
					list, err := c.Contexts(ctx, s.ID)
					if err != nil || len(list) != 1 || list[0].ID != client.FirstContext || list[0].Language != lang || !list[0].Default {
						t.Fatalf("contexts of a %s session: %+v %v", lang, list, err)
					}
				})
			}

			s, err := c.CreateSession(ctx, client.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Language != "python3" {
				t.Fatalf("default language %q", s.Language)
			}
			if _, err := c.Execute(ctx, s.ID, "x = 'first'", client.ExecuteOptions{}); err != nil {
				t.Fatal(err)
			}
			second, err := c.CreateContext(ctx, s.ID, client.ContextOptions{Language: "python", Cwd: "sub"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(second.ID, "python3-") || second.Language != "python3" || second.Cwd != "/home/user/sub" || second.Default || second.State != "idle" {
				t.Fatalf("new context %+v", second)
			}

			t.Run("contexts keep their own variables", func(t *testing.T) {
				x, err := c.Execute(ctx, s.ID, "import os\nprint(os.getcwd())\nx", client.ExecuteOptions{Context: second.ID})
				if err != nil || x.Stdout != "/home/user/sub\n" || x.Error == nil || x.Error.Name != "NameError" {
					t.Fatalf("x in the second context: %+v %v", x, err)
				}
				if _, err := c.Execute(ctx, s.ID, "x = 'second'", client.ExecuteOptions{Context: second.ID}); err != nil {
					t.Fatal(err)
				}
				// Language python runs in Python's default context: the first.
				for _, o := range []client.ExecuteOptions{{}, {Language: "python"}, {Context: client.FirstContext}, {Context: client.FirstContext, Language: "py"}} {
					x, err = c.Execute(ctx, s.ID, "x", o)
					if err != nil || x.Result.Text("text/plain") != "'first'" {
						t.Fatalf("x with %+v: %+v %v", o, x, err)
					}
				}
				x, err = c.Execute(ctx, s.ID, "x", client.ExecuteOptions{Context: second.ID})
				if err != nil || x.Result.Text("text/plain") != "'second'" {
					t.Fatalf("x in the second context: %+v %v", x, err)
				}
				comp, err := c.Complete(ctx, s.ID, "os.getc", 7, client.In{Context: second.ID})
				if err != nil || !contains(comp.Matches, "getcwd") {
					t.Fatalf("complete in the second context: %+v %v", comp, err)
				}
				if comp, err = c.Complete(ctx, s.ID, "os.getc", 7); err != nil || len(comp.Matches) != 0 {
					t.Fatalf("complete in the first context (no os there): %+v %v", comp, err)
				}
				insp, err := c.Inspect(ctx, s.ID, "os", 2, 0, client.In{Context: second.ID})
				if err != nil || !insp.Found {
					t.Fatalf("inspect in the second context: %+v %v", insp, err)
				}
			})

			t.Run("errors", func(t *testing.T) {
				var ae *client.APIError
				if _, err := c.Execute(ctx, s.ID, "1", client.ExecuteOptions{Context: "python3-00000000"}); !errors.As(err, &ae) || ae.Code != "context_not_found" || !errors.Is(err, client.ErrNotFound) {
					t.Fatalf("unknown context: %v", err)
				}
				if _, err := c.Execute(ctx, s.ID, "1", client.ExecuteOptions{Context: second.ID, Language: "bash"}); !errors.Is(err, client.ErrBadRequest) {
					t.Fatalf("context and language that disagree: %v", err)
				}
				_, err := c.CreateContext(ctx, s.ID, client.ContextOptions{Language: "cobol"})
				if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, `unknown language "cobol"`) {
					t.Fatalf("a cobol context: %v", err)
				}
				if _, err := c.CreateContext(ctx, s.ID, client.ContextOptions{Language: "python", Cwd: "../etc"}); !errors.Is(err, client.ErrBadRequest) {
					t.Fatalf("a cwd outside the workspace: %v", err)
				}
				if _, err := c.CreateContext(ctx, s.ID, client.ContextOptions{}); !errors.Is(err, client.ErrBadRequest) {
					t.Fatalf("a context without a language: %v", err)
				}
				if err := c.DeleteContext(ctx, s.ID, client.FirstContext); !errors.Is(err, client.ErrBadRequest) {
					t.Fatalf("delete the first context: %v", err)
				}
				if _, err := c.Contexts(ctx, "nope-nope-nope"); !errors.Is(err, client.ErrNotFound) {
					t.Fatalf("contexts of a missing session: %v", err)
				}
				if _, err := g.Client(t, apptest.KeyB).Contexts(ctx, s.ID); !errors.Is(err, client.ErrNotFound) {
					t.Fatalf("another key's session's contexts: %v", err)
				}
			})

			t.Run("interrupt one context while another runs", func(t *testing.T) {
				k, err := c.Connect(ctx, s.ID, client.ConnectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer k.Close()
				if err := k.Execute(ctx, client.ExecuteRequest{ID: "sleepy", Code: "import time\nprint('go', flush=True)\ntime.sleep(60)", Context: second.ID}); err != nil {
					t.Fatal(err)
				}
				evs := until(t, ctx, k, func(ev client.Event) bool { return ev.Type == client.EventStream && ev.ID == "sleepy" })
				if ev := evs[len(evs)-1]; ev.Context != second.ID {
					t.Fatalf("event of the second context names %q", ev.Context)
				}
				// The first context is not queued behind the second's sleep.
				x, err := c.Execute(ctx, s.ID, "x", client.ExecuteOptions{Timeout: 20 * time.Second})
				if err != nil || x.Status != client.StatusOK || x.Result.Text("text/plain") != "'first'" {
					t.Fatalf("first context beside a busy one: %+v %v", x, err)
				}
				if err := k.InterruptContext(ctx, second.ID); err != nil {
					t.Fatal(err)
				}
				evs = until(t, ctx, k, func(ev client.Event) bool { return ev.Type == client.EventDone && ev.ID == "sleepy" })
				if d := evs[len(evs)-1]; d.Status != client.StatusInterrupted || d.Context != second.ID {
					t.Fatalf("interrupted: %+v", d)
				}
				// Run with a context streams it there.
				var seen []string
				x, err = k.Run(ctx, "x", client.RunOptions{Context: second.ID, OnEvent: func(ev client.Event) { seen = append(seen, ev.Context) }})
				if err != nil || x.Result.Text("text/plain") != "'second'" || len(seen) == 0 || seen[0] != second.ID {
					t.Fatalf("run in the second context: %+v %v (contexts of its events %q)", x, err, seen)
				}
				if err := c.InterruptContext(ctx, s.ID, second.ID); err != nil {
					t.Fatalf("REST interrupt of an idle context: %v", err)
				}
				if err := c.InterruptContext(ctx, s.ID, "python3-00000000"); !errors.Is(err, client.ErrNotFound) {
					t.Fatalf("interrupt of an unknown context: %v", err)
				}
			})

			for _, lang := range apptest.Languages() {
				t.Run("default context of "+lang, func(t *testing.T) {
					g.NeedKernel(t, lang)
					x, err := c.Execute(ctx, s.ID, apptest.Print42(lang), client.ExecuteOptions{Language: lang})
					if err != nil || x.Status != client.StatusOK || x.Stdout != "42\n" {
						t.Fatalf("%s by language: %+v %v", lang, x, err)
					}
					list, err := c.Contexts(ctx, s.ID)
					if err != nil {
						t.Fatal(err)
					}
					var found *client.Context
					for i := range list {
						if list[i].Language == lang {
							found = &list[i]
						}
					}
					if found == nil || !found.Default || found.Cwd != "/home/user" {
						t.Fatalf("%s's default context in %+v", lang, list)
					}
					// Over the WebSocket, by language: the same context.
					var where []string
					x, err = c.Run(ctx, s.ID, apptest.Print42(lang), client.RunOptions{Language: lang, OnEvent: func(ev client.Event) { where = append(where, ev.Context) }})
					if err != nil || x.Stdout != "42\n" || len(where) == 0 || where[len(where)-1] != found.ID {
						t.Fatalf("%s over the WebSocket: %+v %v (contexts %q, want %s)", lang, x, err, where, found.ID)
					}
				})
			}

			t.Run("restart and delete a context", func(t *testing.T) {
				if err := c.RestartContext(ctx, s.ID, second.ID); err != nil {
					t.Fatal(err)
				}
				x, err := c.Execute(ctx, s.ID, "x", client.ExecuteOptions{Context: second.ID})
				if err != nil || x.Error == nil || x.Error.Name != "NameError" {
					t.Fatalf("x after the second context's restart: %+v %v", x, err)
				}
				if x, err = c.Execute(ctx, s.ID, "x", client.ExecuteOptions{}); err != nil || x.Result.Text("text/plain") != "'first'" {
					t.Fatalf("the first context after the second's restart: %+v %v", x, err)
				}
				if err := c.DeleteContext(ctx, s.ID, second.ID); err != nil {
					t.Fatal(err)
				}
				if err := c.DeleteContext(ctx, s.ID, second.ID); !errors.Is(err, client.ErrNotFound) {
					t.Fatalf("delete again: %v", err)
				}
				list, err := c.Contexts(ctx, s.ID)
				if err != nil || list[0].ID != client.FirstContext {
					t.Fatalf("contexts: %+v %v", list, err)
				}
				for _, cx := range list {
					if cx.ID == second.ID {
						t.Fatalf("deleted context listed: %+v", list)
					}
				}
				if x, err = c.Execute(ctx, s.ID, "x", client.ExecuteOptions{}); err != nil || x.Result.Text("text/plain") != "'first'" {
					t.Fatalf("the first context after the second's deletion: %+v %v", x, err)
				}
			})
			if err := c.DeleteSession(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
