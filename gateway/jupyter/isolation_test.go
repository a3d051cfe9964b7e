package jupyter_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
)

// What one client of the Jupyter face cannot do to another: evict another
// tenant's resume position, or answer another connection's input(). Real
// gateways over real kernels, with the protocol client of
// jclient_test.go.

// waitConnections waits until kernel id (of key's tenant) has n channels
// connections: a connection's resume position is saved before it stops
// counting.
func (e *env) waitConnections(key, id string, n int) {
	e.t.Helper()
	var m kernelModel
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st := e.jupyterCall("token "+key, "GET", "/api/kernels/"+id, nil, &m); st == http.StatusOK && m.Connections == n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("kernel %s never had %d connections within 60s: last %d", id, n, m.Connections)
		}
	}
}

// TestJupyterResumeIsolation: tenant A opening and closing many more
// channels connections (each its own session_id) than the resume
// positions of the whole gateway used to be bounded by (1,024, shared by
// all tenants, evicted at random) does not cost tenant B its position: B's
// client that comes back still gets what it missed.
func TestJupyterResumeIsolation(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{MaxClients: 1 << 12})
	kb := e.startKernel(keyB, nil)
	ka := e.startKernel(keyA, nil)

	b := e.channels(t, keyB, kb.ID, false, "session_id=client-b")
	b.execute("x = 1")
	b.close()
	e.waitConnections(keyB, kb.ID, 0) // B's position is saved
	if x := e.exec(keyB, strings.ReplaceAll(kb.ID, "-", ""), "print('while b was away')", 0); x.Status != "ok" {
		t.Fatalf("B's execution while away: %+v", x)
	}

	// Six times the old global bound: under it, B's entry would survive
	// the random evictions with a probability of (1023/1024)^5120, 0.7%.
	const churn, workers = 6 * 1024, 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				c, err := tryDialJupyter(e.channelsURL(ka.ID, fmt.Sprintf("session_id=a-%d", i)), http.Header{"Authorization": {"token " + keyA}}, i%2 == 0)
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
				c.close()
			}
		})
	}
	for i := range churn {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	e.waitConnections(keyA, ka.ID, 0) // every position of A's is saved

	b2 := e.channels(t, keyB, kb.ID, false, "session_id=client-b")
	_, all := b2.request("shell", "execute_request", map[string]any{"code": "print('back')"})
	if out := streamText(all); !strings.Contains(out, "while b was away") || !strings.Contains(out, "back") {
		t.Fatalf("B came back to %q, without what it missed: %v", out, all)
	}
}

// TestJupyterInputOwnership: input() is asked of the connection that sent
// the execute_request, and only its answer reaches the kernel. Another
// connection to the same kernel that copies the owner's header.session
// (every iopub parent shows it), reuses the request's msg_id, names the
// owner's input_request as its parent, or answers through /v1, is
// refused; the owner's answer still arrives.
func TestJupyterInputOwnership(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	k := e.startKernel(keyA, nil)
	owner := e.channels(t, keyA, k.ID, false, "session_id=owner-"+randomHex(4))
	other := e.channels(t, keyA, k.ID, false, "session_id=other-"+randomHex(4))
	v1 := e.ws(keyA, strings.ReplaceAll(k.ID, "-", ""))

	// inputRequest waits for owner's input_request for execution id.
	inputRequest := func(id, prompt string) jm {
		t.Helper()
		got := owner.until("input_request", func(m jm) bool { return m.Header.MsgType == "input_request" })
		ir := got[len(got)-1]
		if ir.Channel != "stdin" || ir.Parent.MsgID != id || ir.Content["prompt"] != prompt {
			t.Fatalf("input_request %v", ir)
		}
		return ir
	}
	// ask runs input() on owner's connection and returns the request's
	// msg_id and the input_request owner got.
	ask := func(prompt string) (string, jm) {
		t.Helper()
		id := owner.send("shell", "execute_request", map[string]any{"code": fmt.Sprintf("print('got', input(%q))", prompt), "allow_stdin": true})
		return id, inputRequest(id, prompt)
	}
	// answer sends an input_reply from c under header session, naming
	// parent (nil: none) as its parent.
	answer := func(c *jclient, session string, parent *jhdr, value string) {
		t.Helper()
		h := c.header("input_reply")
		h["session"] = session
		var ph any = map[string]any{}
		if parent != nil {
			ph = parent
		}
		frame, _ := json.Marshal(map[string]any{"channel": "stdin", "header": h, "parent_header": ph, "metadata": map[string]any{},
			"content": map[string]any{"value": value}})
		c.raw(websocket.TextMessage, frame)
	}
	// otherSaw is every message other read.
	var otherSaw []jm
	// barrier returns once other's connection has handled every message
	// other sent before it: the gateway reads a connection's messages in
	// order.
	barrier := func() {
		otherSaw = append(otherSaw, other.sync()...)
	}
	// noInputRequest reads other's messages until execution id's idle
	// status and fails if other was ever asked for an input.
	noInputRequest := func(id string) {
		t.Helper()
		otherSaw = append(otherSaw, other.until("the idle of "+id, func(m jm) bool {
			return m.Channel == "iopub" && m.Parent.MsgID == id && m.Header.MsgType == "status" && m.Content["execution_state"] == "idle"
		})...)
		for _, m := range otherSaw {
			if m.Header.MsgType == "input_request" {
				t.Fatalf("another connection was asked for the input: %v", m)
			}
		}
	}

	// 1. other copies the owner's header.session from an iopub parent and
	// speaks as that Jupyter session.
	id, ir := ask("who? ")
	otherSaw = other.until("the owner's execute_input", func(m jm) bool { return m.Header.MsgType == "execute_input" && m.Parent.MsgID == id })
	stolen := otherSaw[len(otherSaw)-1].Parent.Session
	if stolen != owner.session {
		t.Fatalf("the parent shows session %q, the owner's is %q", stolen, owner.session)
	}
	other.session = stolen
	barrier() // a request under the copied session
	answer(other, stolen, nil, "from other")
	answer(other, stolen, &ir.Header, "from other, naming the request")
	barrier()
	// ... nor can /v1.
	v1.send(map[string]any{"type": "input_reply", "id": id, "value": "from v1"})
	v1.send(map[string]any{"type": "no-such-frame", "id": "barrier"}) // rejected after the input_reply was handled
	refused := false
	for _, f := range v1.until(func(f frame) bool { return f.Type == "rejected" && f.ID == "barrier" }) {
		refused = refused || (f.Type == "rejected" && f.ID == id)
	}
	if !refused {
		t.Fatal("/v1 answered the input() of a channels connection")
	}
	answer(owner, owner.session, &ir.Header, "the owner")
	if _, all := owner.await(id, "input"); !strings.Contains(streamText(all), "got the owner") {
		t.Fatalf("input answered by %q", streamText(all))
	}
	noInputRequest(id)

	// 2. other reuses the msg_id of the owner's request for an execution
	// of its own, queued behind the owner's, before the owner's execution
	// asks for the input at stake (its second).
	other.session = randomHex(16)
	id = owner.send("shell", "execute_request", map[string]any{"code": "input('first? ')\nprint('got', input('again? '))", "allow_stdin": true})
	ir = inputRequest(id, "first? ")
	otherSaw = append(otherSaw, other.until("the owner's execute_input", func(m jm) bool {
		return m.Header.MsgType == "execute_input" && m.Parent.MsgID == id
	})...)
	h := other.header("execute_request")
	h["msg_id"] = id
	other.sendWith("shell", h, map[string]any{"code": "'other ran'", "allow_stdin": true})
	barrier()
	answer(owner, owner.session, &ir.Header, "first")
	ir = inputRequest(id, "again? ")
	answer(other, other.session, nil, "from other")
	answer(other, other.session, &ir.Header, "from other, naming the request")
	barrier()
	answer(owner, owner.session, &ir.Header, "the owner again")
	if _, all := owner.await(id, "input"); !strings.Contains(streamText(all), "got the owner again") {
		t.Fatalf("input answered by %q", streamText(all))
	}
	noInputRequest(id)

	// The owner still answers without naming the request (the running
	// execution's input), as the console clients do.
	id, _ = ask("last? ")
	answer(owner, owner.session, nil, "plainly")
	if _, all := owner.await(id, "input"); !strings.Contains(streamText(all), "got plainly") {
		t.Fatalf("input answered by %q", streamText(all))
	}
}
