// Package dap is the scripted debugger session glassroom's tests run on
// each layer that carries it (the kernel client, a runtime's sandboxed
// kernel, the Jupyter channels WebSocket): the Debug Adapter Protocol
// conversation JupyterLab's debugger has with ipykernel (6.x, debugpy
// behind it), in debug_request/debug_reply messages on the control
// channel and debug_event messages on iopub. Only tests import it.
//
// The script (Script): debugInfo; initialize and attach (ipykernel starts
// debugpy inside the kernel's sandbox, on its loopback); dumpCell (the
// kernel writes the cell where its compiler names it: the temporary
// prefix, the cell's Murmur2 hash, ".py", which Script checks as
// JupyterLab computes it); setBreakpoints on a line of that cell;
// configurationDone; the cell runs and stops at the breakpoint (a
// "stopped" debug_event) while the shell is busy, where stackTrace,
// scopes, variables and richInspectVariables are answered on the control
// channel; continue; the cell completes with its output; disconnect, and
// the cell then runs without stopping.
package dap

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Kernel is what Script needs of a kernel connection at one layer.
// Script calls it from the test's goroutine only.
type Kernel interface {
	// Debug sends one debug_request with this content and returns the
	// debug_reply's content. It must work while a cell runs.
	Debug(ctx context.Context, request map[string]any) (json.RawMessage, error)
	// Event blocks until the next debug_event arrives and returns its
	// content, in the order the kernel sent them. Every debug_event must
	// reach it, whatever its parent header.
	Event(ctx context.Context) (json.RawMessage, error)
	// Run starts running code as a cell and returns at once; the channel
	// receives the cell's outcome once it has finished.
	Run(code string) <-chan Result
}

// Result is how a cell Run started ended.
type Result struct {
	Stdout string // the cell's stdout
	Err    error  // the cell failed or could not run
}

// Wait bounds each step of the script (gVisor starts debugpy's adapter
// slowly on a loaded machine).
const Wait = 90 * time.Second

// Cell is the cell Script debugs, and the line of its breakpoint (in f,
// where a and b are local variables).
const (
	Cell = "def f(a):\n    b = a * 2\n    return b\n\nr = f(21)\nprint('result', r)\n"
	Line = 3
)

// Event is one debug_event's content: a DAP event.
type Event struct {
	Seq   int             `json:"seq"`
	Type  string          `json:"type"`
	Event string          `json:"event"`
	Body  json.RawMessage `json:"body"`
}

// Response is a debug_reply's content: a DAP response.
type Response struct {
	Type       string          `json:"type"`
	RequestSeq int             `json:"request_seq"`
	Success    bool            `json:"success"`
	Command    string          `json:"command"`
	Message    string          `json:"message"`
	Body       json.RawMessage `json:"body"`
}

// session drives one Kernel through the script.
type session struct {
	t      testing.TB
	k      Kernel
	seq    int
	events []Event // the debug_events read and not claimed by waitEvent
}

// request sends command with args and returns the response, failing the
// test unless it succeeded.
func (s *session) request(command string, args map[string]any) Response {
	s.t.Helper()
	r := s.try(command, args)
	if !r.Success {
		s.t.Fatalf("%s failed: %+v", command, r)
	}
	return r
}

// try sends command with args and returns the response, whatever it says.
func (s *session) try(command string, args map[string]any) Response {
	s.t.Helper()
	s.seq++
	req := map[string]any{"type": "request", "seq": s.seq, "command": command}
	if args != nil {
		req["arguments"] = args
	}
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	raw, err := s.k.Debug(ctx, req)
	if err != nil {
		s.t.Fatalf("debug_request %s: %v", command, err)
	}
	var r Response
	if err := json.Unmarshal(raw, &r); err != nil {
		s.t.Fatalf("debug_reply to %s: %v: %s", command, err, raw)
	}
	// ipykernel 6 answers richInspectVariables, while stopped, with the
	// response of the evaluate request it makes of it.
	if r.Command != command && r.Command != "" && command != "richInspectVariables" {
		s.t.Fatalf("debug_reply to %s answers %q: %s", command, r.Command, raw)
	}
	return r
}

// waitEvent returns the oldest debug_event named name not returned yet,
// reading the kernel's events as needed; the events it passes over wait
// for later calls.
func (s *session) waitEvent(name string) Event {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	for {
		for i, ev := range s.events {
			if ev.Event == name {
				s.events = append(s.events[:i:i], s.events[i+1:]...)
				return ev
			}
		}
		raw, err := s.k.Event(ctx)
		if err != nil {
			s.t.Fatalf("waiting for the %q debug_event (unclaimed: %s): %v", name, s.seen(), err)
		}
		var ev Event
		if err := json.Unmarshal(raw, &ev); err != nil || ev.Type != "event" {
			s.t.Fatalf("debug_event content is not a DAP event: %v: %s", err, raw)
		}
		s.events = append(s.events, ev)
	}
}

func (s *session) seen() string {
	names := make([]string, len(s.events))
	for i, ev := range s.events {
		names[i] = ev.Event
	}
	return strings.Join(names, ", ")
}

func decode[T any](t testing.TB, what string, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, raw)
	}
	return v
}

type debugInfo struct {
	IsStarted      bool   `json:"isStarted"`
	HashMethod     string `json:"hashMethod"`
	HashSeed       uint32 `json:"hashSeed"`
	TmpFilePrefix  string `json:"tmpFilePrefix"`
	TmpFileSuffix  string `json:"tmpFileSuffix"`
	StoppedThreads []int  `json:"stoppedThreads"`
	Breakpoints    []struct {
		Source      string `json:"source"`
		Breakpoints []struct {
			Line int `json:"line"`
		} `json:"breakpoints"`
	} `json:"breakpoints"`
}

type variable struct {
	Name               string `json:"name"`
	Value              string `json:"value"`
	VariablesReference int    `json:"variablesReference"`
}

// Stopped is a debugger session whose cell (Cell) is stopped at its
// breakpoint (Line), the shell busy.
type Stopped struct {
	s          *session
	SourcePath string        // where the kernel dumped Cell
	ThreadID   int           // the stopped thread
	Done       <-chan Result // the cell's outcome, once it ends
}

// Request sends one more DAP request of the session and returns its
// response, failing the test unless it succeeded.
func (st *Stopped) Request(command string, args map[string]any) Response {
	st.s.t.Helper()
	return st.s.request(command, args)
}

// Stop runs the script (see the package doc) up to the cell stopped at
// its breakpoint, failing t at the first step that does not go as
// JupyterLab expects. The kernel must be idle, its debugger not started.
func Stop(t testing.TB, k Kernel) *Stopped {
	t.Helper()
	s := &session{t: t, k: k}

	info := decode[debugInfo](t, "debugInfo body", s.request("debugInfo", nil).Body)
	if info.IsStarted || info.HashMethod != "Murmur2" || info.TmpFileSuffix != ".py" || !strings.HasPrefix(info.TmpFilePrefix, "/") {
		t.Fatalf("debugInfo before initialize: %+v", info)
	}

	init := s.request("initialize", map[string]any{
		"clientID": "glassroom-test", "clientName": "glassroom test", "adapterID": "python", "pathFormat": "path",
		"linesStartAt1": true, "columnsStartAt1": true, "supportsVariableType": true, "supportsVariablePaging": true,
		"supportsRunInTerminalRequest": true, "locale": "en",
	})
	caps := decode[struct {
		SupportsConfigurationDoneRequest bool `json:"supportsConfigurationDoneRequest"`
	}](t, "initialize capabilities", init.Body)
	if !caps.SupportsConfigurationDoneRequest {
		t.Fatalf("initialize: not debugpy's capabilities: %s", init.Body)
	}
	s.request("attach", map[string]any{})
	s.waitEvent("initialized")

	dumped := decode[struct {
		SourcePath string `json:"sourcePath"`
	}](t, "dumpCell body", s.request("dumpCell", map[string]any{"code": Cell}).Body)
	want := info.TmpFilePrefix + strconv.FormatUint(uint64(Murmur2(Cell, info.HashSeed)), 10) + info.TmpFileSuffix
	if dumped.SourcePath != want {
		t.Fatalf("dumpCell wrote %q, want %q (JupyterLab computes the path: prefix, Murmur2 of the cell, suffix)", dumped.SourcePath, want)
	}
	src := s.request("source", map[string]any{"source": map[string]any{"path": dumped.SourcePath}})
	if got := decode[struct {
		Content string `json:"content"`
	}](t, "source body", src.Body); got.Content != Cell {
		t.Fatalf("source of the dumped cell: %q, want the cell", got.Content)
	}

	bps := decode[struct {
		Breakpoints []struct {
			Verified bool `json:"verified"`
			Line     int  `json:"line"`
		} `json:"breakpoints"`
	}](t, "setBreakpoints body", s.request("setBreakpoints", map[string]any{
		"source": map[string]any{"path": dumped.SourcePath}, "breakpoints": []any{map[string]any{"line": Line}}, "sourceModified": false,
	}).Body)
	if len(bps.Breakpoints) != 1 || !bps.Breakpoints[0].Verified || bps.Breakpoints[0].Line != Line {
		t.Fatalf("setBreakpoints: %+v", bps)
	}
	s.request("configurationDone", nil)
	info = decode[debugInfo](t, "debugInfo body", s.request("debugInfo", nil).Body)
	if !info.IsStarted || len(info.Breakpoints) != 1 || info.Breakpoints[0].Source != dumped.SourcePath {
		t.Fatalf("debugInfo after configurationDone: %+v", info)
	}

	done := k.Run(Cell)
	stopped := decode[struct {
		Reason   string `json:"reason"`
		ThreadID int    `json:"threadId"`
	}](t, "stopped body", s.waitEvent("stopped").Body)
	if stopped.Reason != "breakpoint" {
		t.Fatalf("stopped for %q, want breakpoint", stopped.Reason)
	}
	return &Stopped{s: s, SourcePath: dumped.SourcePath, ThreadID: stopped.ThreadID, Done: done}
}

// Script runs the scripted debugger session on k (see the package doc)
// and fails t at the first step that does not go as JupyterLab expects.
// The kernel must be idle, its debugger not started.
func Script(t testing.TB, k Kernel) {
	t.Helper()
	st := Stop(t, k)
	s, done := st.s, st.Done
	// The cell is stopped, the shell busy: the control channel answers.
	frames := decode[struct {
		StackFrames []struct {
			ID     int    `json:"id"`
			Name   string `json:"name"`
			Line   int    `json:"line"`
			Source struct {
				Path string `json:"path"`
			} `json:"source"`
		} `json:"stackFrames"`
	}](t, "stackTrace body", s.request("stackTrace", map[string]any{"threadId": st.ThreadID}).Body)
	if len(frames.StackFrames) == 0 {
		t.Fatal("stackTrace: no frames")
	}
	top := frames.StackFrames[0]
	if top.Name != "f" || top.Line != Line || top.Source.Path != st.SourcePath {
		t.Fatalf("top frame %+v, want f at line %d of %s", top, Line, st.SourcePath)
	}
	scopes := decode[struct {
		Scopes []struct {
			Name               string `json:"name"`
			VariablesReference int    `json:"variablesReference"`
		} `json:"scopes"`
	}](t, "scopes body", s.request("scopes", map[string]any{"frameId": top.ID}).Body)
	locals := 0
	for _, sc := range scopes.Scopes {
		if sc.Name == "Locals" {
			locals = sc.VariablesReference
		}
	}
	if locals == 0 {
		t.Fatalf("scopes: no Locals: %+v", scopes)
	}
	vars := decode[struct {
		Variables []variable `json:"variables"`
	}](t, "variables body", s.request("variables", map[string]any{"variablesReference": locals}).Body)
	values := map[string]string{}
	for _, v := range vars.Variables {
		values[v.Name] = v.Value
	}
	if values["a"] != "21" || values["b"] != "42" {
		t.Fatalf("locals at the breakpoint: %+v, want a=21 b=42", vars.Variables)
	}
	rich := decode[struct {
		Data map[string]any `json:"data"`
	}](t, "richInspectVariables body", s.request("richInspectVariables", map[string]any{"variableName": "b", "frameId": top.ID}).Body)
	if rich.Data["text/plain"] != "42" {
		t.Fatalf("richInspectVariables b: %+v", rich.Data)
	}
	info := decode[debugInfo](t, "debugInfo body", s.request("debugInfo", nil).Body)
	if !slices.Contains(info.StoppedThreads, st.ThreadID) {
		t.Fatalf("debugInfo while stopped: stopped threads %v, without the cell's %d", info.StoppedThreads, st.ThreadID)
	}
	select {
	case r := <-done:
		t.Fatalf("the cell ended while stopped at its breakpoint: %+v", r)
	default:
	}

	s.request("continue", map[string]any{"threadId": st.ThreadID})
	s.waitEvent("continued")
	r := wait(t, done)
	if r.Err != nil || r.Stdout != "result 42\n" {
		t.Fatalf("the cell after continue: %+v, want its output", r)
	}

	s.request("disconnect", map[string]any{"restart": false, "terminateDebuggee": false})
	if info := decode[debugInfo](t, "debugInfo body", s.request("debugInfo", nil).Body); info.IsStarted {
		t.Fatalf("debugInfo after disconnect: %+v", info)
	}
	if r := wait(t, k.Run(Cell)); r.Err != nil || r.Stdout != "result 42\n" {
		t.Fatalf("the cell after disconnect: %+v", r)
	}
}

func wait(t testing.TB, done <-chan Result) Result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(Wait):
		t.Fatalf("the cell did not finish within %v", Wait)
		return Result{}
	}
}

// Murmur2 is the hash ipykernel names a cell's file by (its compiler's
// murmur2_x86 over the cell's UTF-8 bytes), as JupyterLab computes it to
// find the file of a cell.
func Murmur2(data string, seed uint32) uint32 {
	const m = 0x5BD1E995
	b := []byte(data)
	h := seed ^ uint32(len(b))
	i := 0
	for ; i+4 <= len(b); i += 4 {
		k := uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24
		k *= m
		k ^= k >> 24
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) - i {
	case 3:
		h ^= uint32(b[i+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[i+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[i])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// String renders an event for failure messages.
func (e Event) String() string { return fmt.Sprintf("%s %s", e.Event, e.Body) }
