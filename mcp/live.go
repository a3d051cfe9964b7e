package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Streamer is what a backend needs for live output: executions over the
// session's WebSocket (client.Client.Run interrupts the kernel when its
// context ends) and the session's events (for commands). *client.Client
// satisfies it; a backend without it runs executions over REST, without
// progress.
type Streamer interface {
	Run(ctx context.Context, sessionID, code string, opts client.RunOptions) (*client.Execution, error)
	Connect(ctx context.Context, sessionID string, opts client.ConnectOptions) (*client.Conn, error)
}

var _ Streamer = (*client.Client)(nil)

const (
	// progressChunk bounds the output one progress or log notification
	// carries: the newest characters of what arrived since the last one.
	progressChunk = 2000
	// progressEvery spaces notifications of one call: output arriving
	// sooner is carried by the next one (at most 10 a second).
	progressEvery = 100 * time.Millisecond
)

// live sends a running call's output to the client: progress
// notifications (when the call gave a progress token) with the newest
// output and the running count of characters, and log notifications
// (level warning, logger "stderr") with stderr. Its methods are called
// from one goroutine at a time; sending errors are ignored (the client may
// have gone).
type live struct {
	ctx   context.Context
	ss    *sdk.ServerSession
	token any

	total              int // characters of output so far
	out, errs          strings.Builder
	lastOut, lastErr   time.Time
	sentOut, sentErrNo int
}

func newLive(ctx context.Context, req *sdk.CallToolRequest) *live {
	l := &live{ctx: ctx}
	if req != nil && req.Session != nil {
		l.ss = req.Session
		if req.Params != nil {
			l.token = req.Params.GetProgressToken()
		}
	}
	return l
}

// output notes a chunk of stdout ("stdout") or stderr ("stderr").
func (l *live) output(name, text string) {
	if l == nil || l.ss == nil || text == "" {
		return
	}
	l.total += len([]rune(text))
	now := time.Now()
	if l.token != nil {
		l.out.WriteString(text)
		if l.sentOut == 0 || now.Sub(l.lastOut) >= progressEvery {
			l.lastOut = now
			l.sentOut++
			_ = l.ss.NotifyProgress(l.ctx, &sdk.ProgressNotificationParams{ProgressToken: l.token,
				Progress: float64(l.total), Message: tail(l.out.String(), progressChunk)})
			l.out.Reset()
		}
	}
	if name == "stderr" {
		l.errs.WriteString(text)
		if l.sentErrNo == 0 || now.Sub(l.lastErr) >= progressEvery {
			l.lastErr = now
			l.sentErrNo++
			_ = l.ss.Log(l.ctx, &sdk.LoggingMessageParams{Level: "warning", Logger: "stderr", Data: tail(l.errs.String(), progressChunk)}) //nolint:staticcheck // logging is deprecated by SEP-2577 but still the protocol's way to stream stderr (kept for its deprecation window)
			l.errs.Reset()
		}
	}
}

// tail returns the last n characters of s.
func tail(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n:])
}

// run executes code, streamed when the backend can: output goes to the
// client as it comes, and a cancelled call interrupts the kernel (the
// session keeps its state). Without a Streamer it is a REST execution.
func (t *tools) run(ctx context.Context, req *sdk.CallToolRequest, id, code string, opts client.ExecuteOptions) (*client.Execution, error) {
	st, ok := t.b.(Streamer)
	if !ok {
		return t.b.Execute(ctx, id, code, opts)
	}
	l := newLive(ctx, req)
	x, err := st.Run(ctx, id, code, client.RunOptions{Timeout: opts.Timeout, Context: opts.Context, Language: opts.Language,
		Envs: opts.Envs, Cwd: opts.Cwd, OnEvent: func(ev client.Event) {
			if ev.Type == client.EventStream {
				l.output(ev.Name, ev.Text)
			}
		}})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("the call was cancelled; the code was interrupted and the session keeps its state: %w", ctx.Err())
	}
	return x, err
}

// runCommandLive runs a foreground command, watching the session's events
// for its output meanwhile (when the backend can): the gateway kills the
// command when the call is cancelled (the request ends).
func (t *tools) runCommandLive(ctx context.Context, req *sdk.CallToolRequest, id, cmd string, opts client.CommandOptions) (*client.Command, error) {
	st, ok := t.b.(Streamer)
	l := newLive(ctx, req)
	if !ok || l.ss == nil {
		return t.b.RunCommand(ctx, id, cmd, opts)
	}
	k, err := st.Connect(ctx, id, client.ConnectOptions{})
	if err != nil {
		return t.b.RunCommand(ctx, id, cmd, opts)
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by this call: ends when the command has (stop) or the connection does
		defer wg.Done()
		pid := 0
		want := cmd
		if len([]rune(want)) > 4096 {
			want = ""
		}
		for {
			ev, err := k.Next(wctx)
			if err != nil {
				return
			}
			if ev.Type != "command" || ev.PID == 0 {
				continue
			}
			switch {
			case pid == 0 && ev.State == "started" && (want == "" || ev.Text == want):
				pid = ev.PID
			case ev.PID == pid && (ev.Name == "stdout" || ev.Name == "stderr"):
				l.output(ev.Name, ev.Text)
			}
		}
	}()
	c, err := t.b.RunCommand(ctx, id, cmd, opts)
	stop()
	wg.Wait()
	_ = k.Close()
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("the call was cancelled; the command was killed: %w", ctx.Err())
	}
	return c, err
}

type interruptInput struct {
	SessionID string `json:"session_id" jsonschema:"The session (from an earlier answer)."`
	Context   string `json:"context,omitempty" jsonschema:"Interrupt only this context (kernel) of the session. Omit it to interrupt every kernel that is running code."`
}

func (t *tools) interrupt(ctx context.Context, _ *sdk.CallToolRequest, in interruptInput) (*sdk.CallToolResult, any, error) {
	if err := needSession(in.SessionID); err != nil {
		return nil, nil, err
	}
	var err error
	if in.Context != "" {
		err = t.b.InterruptContext(ctx, in.SessionID, in.Context)
	} else {
		err = t.b.Interrupt(ctx, in.SessionID)
	}
	if err != nil {
		return nil, nil, explain(err, in.SessionID, "")
	}
	return textResult(fmt.Sprintf("Interrupted the running code of session %s (a KeyboardInterrupt, or the language's equivalent): "+
		"variables defined before are kept. Queued executions still run.", in.SessionID)), nil, nil
}

// SessionSummary is one session in list_sessions' structured output.
type SessionSummary struct {
	ID             string   `json:"id"`
	Language       string   `json:"language" jsonschema:"the kernel of the session's first context"`
	State          string   `json:"state" jsonschema:"idle, busy, restarting or dead"`
	Network        []string `json:"network" jsonschema:"the hosts the session may reach; empty: no network"`
	IdleTimeoutS   int      `json:"idle_timeout_s" jsonschema:"the session ends after this long without use"`
	ExpiresInS     int      `json:"expires_in_s" jsonschema:"seconds left before it ends if unused"`
	CreatedByThese bool     `json:"created_here" jsonschema:"whether these tools (this MCP connection) started it"`
}

// SessionsOutput is list_sessions' structured output.
type SessionsOutput struct {
	Sessions []SessionSummary `json:"sessions"`
}

func networkText(n *client.Network) string {
	if n == nil || len(n.Allow) == 0 {
		return "no network"
	}
	return "network: " + strings.Join(n.Allow, ", ")
}

func (t *tools) listSessions(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, SessionsOutput, error) {
	ss, err := t.b.ListSessions(ctx)
	if err != nil {
		return nil, SessionsOutput{}, explain(err, "", "")
	}
	out := SessionsOutput{Sessions: []SessionSummary{}}
	if len(ss) == 0 {
		return textResult("You have no sessions. execute_python or create_session starts one."), out, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d sessions (id, language, state, network, time left):\n", len(ss))
	now := time.Now()
	for _, s := range ss {
		left := max(0, int(s.ExpiresAt.Sub(now).Seconds()))
		sum := SessionSummary{ID: s.ID, Language: s.Language, State: s.State, Network: []string{},
			IdleTimeoutS: s.IdleTimeoutS, ExpiresInS: left}
		if s.Network != nil {
			sum.Network = append(sum.Network, s.Network.Allow...)
		}
		t.mu.Lock()
		sum.CreatedByThese = t.created[s.ID]
		t.mu.Unlock()
		out.Sessions = append(out.Sessions, sum)
		state := s.State
		if s.Paused {
			state += " (paused)"
		}
		fmt.Fprintf(&b, "%s  %s  %s  %s  ends after %s unused (idle timeout %ds)\n", s.ID, s.Language, state, networkText(s.Network),
			(time.Duration(left) * time.Second).String(), s.IdleTimeoutS)
	}
	text, _ := clipHead(b.String(), t.cfg.MaxTextChars-100)
	return textResult(text), out, nil
}

type limitsInput struct {
	MemoryMB    int     `json:"memory_mb,omitempty" jsonschema:"Memory of the sandbox, in MiB."`
	CPUs        float64 `json:"cpus,omitempty" jsonschema:"CPUs of the sandbox (e.g. 0.5, 2)."`
	Pids        int     `json:"pids,omitempty" jsonschema:"Maximum number of processes."`
	WorkspaceMB int     `json:"workspace_mb,omitempty" jsonschema:"Size of the workspace, in MiB."`
}

type createInput struct {
	Language     string       `json:"language,omitempty" jsonschema:"The language of the session's first kernel: python (default), r, javascript, typescript, bash or java."`
	Limits       *limitsInput `json:"limits,omitempty" jsonschema:"Resource limits; omitted fields take the gateway's defaults. Values above the operator's maximum are lowered to it (the answer states the limits the session got); values too small to run a kernel are refused."`
	Network      []string     `json:"network,omitempty" jsonschema:"Hosts the session may reach (e.g. pypi.org, *.pythonhosted.org, api.example.com:443), within the operator's allowlist. Omit it: no network."`
	IdleTimeoutS float64      `json:"idle_timeout_s,omitempty" jsonschema:"End the session after this many seconds without use (default: the gateway's)."`
	Snapshot     string       `json:"snapshot,omitempty" jsonschema:"A snapshot_id from snapshot_session: the session starts with that snapshot's files and variables (its language too, unless language is given)."`
}

// CreateOutput is create_session's structured output.
type CreateOutput struct {
	SessionID string   `json:"session_id"`
	Language  string   `json:"language"`
	Network   []string `json:"network" jsonschema:"the hosts the session may reach; empty: no network"`
}

func (t *tools) createSession(ctx context.Context, _ *sdk.CallToolRequest, in createInput) (*sdk.CallToolResult, CreateOutput, error) {
	opts := t.cfg.NewSession
	if in.Language != "" {
		opts.Language = strings.ToLower(strings.TrimSpace(in.Language))
	}
	if in.Limits != nil {
		opts.Limits = client.Limits(*in.Limits) // limitsInput has api.Limits's fields (with the tool's descriptions)
	}
	if len(in.Network) > 0 {
		opts.Network = &client.Network{Allow: in.Network}
	}
	if in.IdleTimeoutS < 0 {
		return nil, CreateOutput{}, errors.New("idle_timeout_s must be positive")
	}
	opts.IdleTimeout = time.Duration(in.IdleTimeoutS * float64(time.Second))
	opts.Snapshot = strings.TrimSpace(in.Snapshot)
	s, err := t.b.CreateSession(ctx, opts)
	if err != nil {
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Status == 400 {
			return nil, CreateOutput{}, fmt.Errorf("the gateway refused the session: %s%s", ae.Message, t.policyHint())
		}
		return nil, CreateOutput{}, explain(err, "", "")
	}
	t.mu.Lock()
	t.created[s.ID] = true
	t.mu.Unlock()
	out := CreateOutput{SessionID: s.ID, Language: s.Language, Network: []string{}}
	if s.Network != nil {
		out.Network = append(out.Network, s.Network.Allow...)
	}
	l := s.Limits
	msg := fmt.Sprintf("Started session %q (%s). Pass session_id=%q to later calls. It has %s. Limits: %d MiB memory, %g CPUs, %d processes, %d MiB workspace; idle timeout %ds.",
		s.ID, s.Language, s.ID, networkText(s.Network), l.MemoryMB, l.CPUs, l.Pids, l.WorkspaceMB, s.IdleTimeoutS)
	if r := s.Restore; r != nil {
		msg += "\n" + restoreText(r)
	}
	return textResult(msg), out, nil
}

// policyHint states the operator's network ceiling after a refusal.
func (t *tools) policyHint() string {
	if t.cfg.Network == nil {
		return ""
	}
	if len(t.cfg.Network.Allow) == 0 {
		return ". This gateway gives no session a network"
	}
	return ". Sessions may reach at most: " + strings.Join(t.cfg.Network.Allow, ", ")
}

// networkSentence states the operator's network policy, for descriptions.
func networkSentence(p *NetworkPolicy) string {
	switch {
	case p == nil:
		return "Whether a session has a network depends on the gateway's operator: list_sessions and create_session's answer say, per session."
	case len(p.Allow) == 0:
		return "Sessions have no network access: this gateway's operator allows none."
	default:
		return "Sessions have no network access unless created with create_session's network allowlist, within this gateway's ceiling: " +
			strings.Join(p.Allow, ", ") + "."
	}
}
